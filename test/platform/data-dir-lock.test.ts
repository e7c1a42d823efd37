import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scaled } from '../helpers/slowness.js'

/**
 * The embedded database's lock (src/db/data-dir-lock.ts) between real processes (issue 33, item 11):
 * two racing for a stale lock, a lock naming a live process that is not a holder.
 */

interface Contender {
  child: ChildProcess
  /** The next answer line. */
  next(): Promise<string>
}

function startContender(): Promise<Contender> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/lock-contender.ts'], { stdio: ['pipe', 'pipe', 'inherit'] })
  const answers: string[] = []
  const waiting: ((line: string) => void)[] = []
  let buffered = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += String(chunk)
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(end + 1)
      const waiter = waiting.shift()
      if (waiter) waiter(line)
      else answers.push(line)
    }
  })
  child.on('exit', (code) => {
    for (const waiter of waiting.splice(0)) waiter(`exited ${code}`)
  })
  const contender = {
    child,
    next: () => {
      const line = answers.shift()
      return line !== undefined ? Promise.resolve(line) : new Promise<string>((resolve) => waiting.push(resolve))
    },
  }
  return contender.next().then((ready) => {
    if (ready !== 'ready') throw new Error(`contender did not start: ${ready}`)
    return contender
  })
}

/** A pid that names no process: a child's, once it has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''])
  await new Promise((resolve) => child.on('exit', resolve))
  return child.pid ?? 0
}

const ROUNDS = 150

describe('the embedded database lock between processes', { timeout: scaled(300_000) }, () => {
  let dir: string
  let contenders: Contender[] = []
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'receivables-lock-'))
    contenders = await Promise.all([startContender(), startContender()])
  })
  afterAll(async () => {
    for (const { child } of contenders) child.stdin?.end()
    await Promise.all(contenders.map(({ child }) => (child.exitCode === null ? new Promise((resolve) => child.on('exit', resolve)) : undefined)))
    await rm(dir, { recursive: true, force: true })
  })

  it(`two processes racing for a stale lock: exactly one holds it, every round of ${ROUNDS}, and neither fails`, async () => {
    const dead = await deadPid()
    const outcomes: string[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const folder = path.join(dir, `race-${round}`)
      // Left by a process that is gone: in the lock's first format (the pid alone) and in its own.
      await writeFile(`${folder}.lock`, round % 2 ? `${dead}\n` : `${dead} 4242 0123456789abcdef\n`)
      const at = Date.now() + 40
      for (const { child } of contenders) child.stdin?.write(`${folder} ${at}\n`)
      const answers = await Promise.all(contenders.map((contender) => contender.next()))
      const held = answers.filter((answer) => answer === `held ${folder}`)
      const holder = contenders[answers.indexOf(`held ${folder}`)]?.child.pid
      const busy = answers.filter((answer) => answer === `busy ${folder} ${holder}`)
      outcomes.push(held.length === 1 && busy.length === 1 ? 'one holder' : `round ${round}: ${answers.join(' | ')}`)
    }
    const failures = outcomes.filter((outcome) => outcome !== 'one holder')
    expect(failures).toEqual([])
  })

  it('a lock naming a live process that is not its holder (a reused pid) is taken over', async () => {
    const sleeper = spawn('sleep', ['60'])
    try {
      const pid = sleeper.pid ?? 0
      const [contender] = contenders
      // The pid alone (the lock's first version), and the pid with another process' start time.
      for (const [name, content] of [
        ['pid-only', `${pid}\n`],
        ['other-start', `${pid} 1\n`],
      ] as const) {
        const folder = path.join(dir, name)
        await writeFile(`${folder}.lock`, content)
        contender?.child.stdin?.write(`${folder} 0\n`)
        expect(await contender?.next()).toBe(`held ${folder}`)
        expect((await readFile(`${folder}.lock`, 'utf8')).split(' ')[0]).toBe(String(contender?.child.pid))
      }
    } finally {
      sleeper.kill('SIGKILL')
    }
  })

  it("a first-format lock naming a live node process that is not this service is taken over; one naming the service's is not (issue 42, item 13)", async () => {
    // `node` running a script of its own, outside this package.
    const script = path.join(dir, 'other-program.js')
    await writeFile(script, "process.stdout.write('up\\n'); setInterval(() => {}, 60_000)\n")
    const other = spawn(process.execPath, [script], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      await new Promise((resolve) => other.stdout.once('data', resolve))
      const [contender, service] = contenders
      const folder = path.join(dir, 'first-format-other-node')
      await writeFile(`${folder}.lock`, `${other.pid}\n`)
      contender?.child.stdin?.write(`${folder} 0\n`)
      expect(await contender?.next()).toBe(`held ${folder}`)
      // The pid alone of a process running this service (a contender, test/helpers/lock-contender.ts) still holds.
      const held = path.join(dir, 'first-format-service')
      await writeFile(`${held}.lock`, `${service?.child.pid}\n`)
      contender?.child.stdin?.write(`${held} 0\n`)
      expect(await contender?.next()).toBe(`busy ${held} ${service?.child.pid}`)
    } finally {
      other.kill('SIGKILL')
    }
  })
})

import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { get } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../helpers/ports.js'
import { scaled } from '../helpers/slowness.js'

/**
 * `npm run dev` (scripts/dev.mjs, scripts/dev-runner.mjs, src/dev-server.ts) in a copy of the
 * project, whose sources the test edits as a developer would: a save is served by the new code
 * without reopening the database, a save that does not build leaves the previous version serving.
 */

const PROJECT = ['src', 'schemas', 'db', 'scripts', 'package.json', 'tsconfig.json']

async function projectCopy(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dev-server-'))
  for (const entry of PROJECT) await cp(entry, path.join(dir, entry), { recursive: true })
  await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'))
  return dir
}

interface Dev {
  child: ChildProcess
  lines: string[]
  stderr: string[]
  exited: Promise<number | null>
}

function startDev(dir: string, env: Record<string, string>): Dev {
  const child = spawn(process.execPath, ['scripts/dev.mjs'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', METRICS_PORT: '0', LOG_LEVEL: 'info', PGLITE_DIR: path.join(dir, 'data'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const dev: Dev = { child, lines: [], stderr: [], exited: new Promise((resolve) => child.on('exit', resolve)) }
  child.stdout?.on('data', (chunk: Buffer) => dev.lines.push(...String(chunk).split('\n').filter(Boolean)))
  child.stderr?.on('data', (chunk: Buffer) => dev.stderr.push(...String(chunk).split('\n').filter(Boolean)))
  return dev
}

const messages = (dev: Dev): string[] => dev.lines.map((line) => (JSON.parse(line) as { msg: string }).msg)

async function until(dev: Dev, what: string, count: number): Promise<void> {
  const deadline = Date.now() + scaled(110_000)
  while (messages(dev).filter((message) => message.startsWith(what)).length < count) {
    if (Date.now() > deadline || dev.child.exitCode !== null) {
      throw new Error(`no "${what}" #${count}:\n${[...dev.lines, ...dev.stderr].join('\n')}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('npm run dev', { timeout: scaled(180_000) }, () => {
  let dir: string
  beforeAll(async () => {
    dir = await projectCopy()
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('serves each save with the new code on the same database; a save that does not build leaves the previous version serving', async () => {
    const port = await freePort()
    const dev = startDev(dir, { PORT: String(port) })
    // Each on a new connection, as curl asks.
    const notFound = () =>
      new Promise<string>((resolve, reject) =>
        get(`http://127.0.0.1:${port}/nope`, { agent: false }, async (response) => {
          let body = ''
          for await (const chunk of response) body += String(chunk)
          resolve((JSON.parse(body) as { detail: string }).detail)
        }).on('error', reject),
      )
    const errors = path.join(dir, 'src/plugins/errors.ts')
    const source = await readFile(errors, 'utf8')
    const save = (text: string) => writeFile(errors, source.replace("'Not found.'", `'${text}'`))
    try {
      await until(dev, 'listening on', 1)
      expect(await notFound()).toBe('Not found.')

      await save('Not found (version 2).')
      await until(dev, 'reloaded in', 1)
      expect(await notFound()).toBe('Not found (version 2).')

      await writeFile(errors, `${source}\nconst = 1\n`)
      await until(dev, 'the code does not build: the previous version serves on', 1)
      expect(await notFound()).toBe('Not found (version 2).')

      await save('Not found (version 3).')
      await until(dev, 'reloaded in', 2)
      expect(await notFound()).toBe('Not found (version 3).')

      // The database was opened, migrated and seeded once, by the process that holds it still.
      expect(messages(dev).filter((message) => message === 'migrations applied')).toHaveLength(1)
      const runner = (JSON.parse(dev.lines.find((line) => line.includes('reloaded in')) ?? '{}') as { pid: number }).pid
      expect(Number.parseInt(await readFile(`${path.join(dir, 'data')}.lock`, 'utf8'), 10)).toBe(runner)
      expect(dev.stderr).toEqual([])
    } finally {
      dev.child.kill('SIGTERM')
      expect(await dev.exited).toBe(0)
    }
    // Stopped, it let go of the database folder.
    expect(existsSync(`${path.join(dir, 'data')}.lock`)).toBe(false)
  })

  it('a port another process holds: the one line, before the database is opened', async () => {
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const port = (holder.address() as { port: number }).port
    try {
      const dev = startDev(dir, { PORT: String(port), PGLITE_DIR: path.join(dir, 'busy') })
      expect(await dev.exited).toBe(1)
      expect(dev.stderr).toEqual([
        `port ${port} is in use by another process (another \`npm run dev\`?): stop it, or start on another port: PORT=${port + 1} npm run dev`,
      ])
      expect(existsSync(path.join(dir, 'busy'))).toBe(false)
    } finally {
      holder.close()
    }
  })
})

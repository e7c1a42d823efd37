import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { nodeVersionProblem as scriptNodeVersionProblem } from '../../scripts/require-node.mjs'
import { nodeVersionProblem } from '../../src/lib/node-version.js'
import { freePort } from '../helpers/ports.js'
import { useServerProcesses } from '../helpers/server-process.js'
import { runProcess } from '../helpers/run-process.js'
import { scaled } from '../helpers/slowness.js'

/**
 * A start that cannot work says why in one line and exits 1 (issue 29, item 9): a second process
 * on one embedded database folder, a port another process holds, a Node.js too old.
 */

interface Exit {
  code: number | null
  stderr: string
}

/** The service as a process that is expected to stop by itself. */
function runServer(env: Record<string, string>): Promise<Exit> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += String(chunk)))
  const killer = setTimeout(() => child.kill('SIGKILL'), scaled(60_000))
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(killer)
      resolve({ code, stderr })
    }),
  )
}

function oneLine(exit: Exit): string {
  const lines = exit.stderr.split('\n').filter(Boolean)
  expect(lines, exit.stderr).toHaveLength(1)
  expect(exit.stderr).not.toMatch(/^\s+at /m)
  expect(exit.code).toBe(1)
  return lines[0] ?? ''
}

const servers = useServerProcesses()
const embedded = !process.env.TEST_DATABASE_URL

describe('a start that cannot work', { timeout: scaled(180_000) }, () => {
  it.runIf(embedded)('a second process on the same embedded database folder is refused, naming the folder and the holder', async () => {
    const first = await servers.start()
    const dataDir = first.dataDir ?? ''
    const second = await runServer({ PORT: String(await freePort()), PGLITE_DIR: dataDir })
    expect(oneLine(second)).toBe(
      `the embedded database in ${dataDir} is in use by process ${first.child.pid}: stop that process, ` +
        'or set PGLITE_DIR to another folder (or DATABASE_URL to a PostgreSQL server)',
    )
    // The first one serves on, undisturbed.
    expect((await fetch(`${first.baseUrl}/health/ready`)).status).toBe(200)
  })

  it.runIf(embedded)('a lock left by a process that is gone is taken over', async () => {
    const first = await servers.start()
    await first.stop('SIGKILL')
    // Killed: it could not remove its lock; the pid in it now names no process.
    const gone = spawn(process.execPath, ['-e', '']).pid ?? 0
    await new Promise((resolve) => setTimeout(resolve, 200))
    await writeFile(`${first.dataDir}.lock`, `${gone}\n`)
    const second = await servers.start({ PGLITE_DIR: first.dataDir ?? '' })
    expect((await fetch(`${second.baseUrl}/health/ready`)).status).toBe(200)
  })

  it.each(['PORT', 'METRICS_PORT'])(
    'a port another process holds (%s): one line naming the port and the fix, exit 1, before the database is opened',
    async (variable) => {
      const holder = createServer()
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
      const port = (holder.address() as { port: number }).port
      // A new embedded database folder: opening the database would create it.
      const parent = await mkdtemp(path.join(tmpdir(), 'busy-port-'))
      const dataDir = path.join(parent, 'pglite')
      try {
        const ports: Record<string, string> =
          variable === 'PORT' ? { PORT: String(port) } : { PORT: String(await freePort()), METRICS_PORT: String(port) }
        const exit = await runServer({ ...ports, METRICS_HOST: '127.0.0.1', PGLITE_DIR: dataDir })
        expect(oneLine(exit)).toBe(
          variable === 'PORT'
            ? `port ${port} is in use by another process (another \`npm start\`?): stop it, or start on another port: PORT=${port + 1} npm start`
            : `metrics port ${port} is in use by another process: stop it, or set METRICS_PORT to another port (0: no metrics)`,
        )
        expect(existsSync(dataDir)).toBe(false)
      } finally {
        holder.close()
        await rm(parent, { recursive: true, force: true })
      }
    },
  )
})

describe('the Node.js version', () => {
  it('older than 24 is named in one line with the fix; 24 and newer pass', () => {
    expect(nodeVersionProblem('20.20.2')).toBe(
      'Node.js 24 or newer is needed; this is Node.js 20.20.2: install Node.js 24 (`nvm install` reads .nvmrc) and run the command again',
    )
    expect(nodeVersionProblem('22.12.0')).toMatch(/^Node.js 24 or newer is needed/)
    expect(nodeVersionProblem('24.0.0')).toBeUndefined()
    expect(nodeVersionProblem('25.1.0')).toBeUndefined()
    expect(nodeVersionProblem(process.versions.node)).toBeUndefined()
  })
})

/** A Node.js older than 24 on this machine (OLD_NODE, else the system's /usr/bin/node), if any. */
function olderNode(): { node: string; problem: string } | undefined {
  const node = process.env.OLD_NODE ?? '/usr/bin/node'
  if (!existsSync(node)) return undefined
  const problem = nodeVersionProblem(execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, ''))
  return problem ? { node, problem } : undefined
}

/** `npm <args>` with `node` on PATH being `node`: what a newcomer on an old Node.js runs. */
async function npmOn(node: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const bin = await mkdtemp(path.join(tmpdir(), 'old-node-'))
  await symlink(node, path.join(bin, 'node'))
  try {
    return await runProcess('npm', args, {
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? tmpdir(),
      METRICS_PORT: '0',
      PORT: '0',
    })
  } finally {
    await rm(bin, { recursive: true, force: true })
  }
}

describe('npm on an older Node.js (issue 34)', () => {
  it('the check npm runs first (scripts/require-node.mjs) says what the service says', () => {
    for (const version of ['20.20.2', '22.12.0', '24.0.0', '25.1.0']) expect(scriptNodeVersionProblem(version)).toBe(nodeVersionProblem(version))
  })

  const old = olderNode()
  it.runIf(old !== undefined).each(['test', 'start', 'run dev', 'run migrate'])(
    'npm %s refuses at once in one line, before a build or a test runs',
    async (command) => {
      const run = await npmOn(old?.node ?? '', command.split(' '))
      expect(run.code).toBe(1)
      expect(run.stderr.split('\n').filter(Boolean), run.stderr).toEqual([old?.problem])
      // Nothing ran after the check: no build (tsc, esbuild), no vitest, no service.
      expect(run.stdout).not.toMatch(/tsc -p|vitest|RUN|listening/)
    },
  )
})

import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { describe, expect, it } from 'vitest'
import { nodeVersionProblem } from '../../src/lib/node-version.js'
import { freePort } from '../helpers/ports.js'
import { TEST_SECRETS } from '../helpers/secrets.js'
import { useServerProcesses } from '../helpers/server-process.js'

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
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000)
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

describe('a start that cannot work', { timeout: 180_000 }, () => {
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

  it('a port another process holds: one line naming the port and the fix, exit 1', async () => {
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const port = (holder.address() as { port: number }).port
    try {
      const exit = await runServer({
        PORT: String(port),
        ...(embedded ? { PGLITE_DIR: 'memory://' } : { DATABASE_URL: process.env.TEST_DATABASE_URL ?? '', ...TEST_SECRETS }),
      })
      expect(oneLine(exit)).toBe(
        `port ${port} is in use by another process (another \`npm start\`?): stop it, or start on another port: PORT=${port + 1} npm start`,
      )
    } finally {
      holder.close()
    }
  })
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

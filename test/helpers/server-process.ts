import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { databaseUrl } from './database-url.js'
import { workerSchema } from './database.js'

export interface ServerProcess {
  child: ChildProcess
  baseUrl: string
  output: string[]
  exited: Promise<number | null>
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (!address || typeof address !== 'object') throw new Error('no port')
  return address.port
}

/**
 * The real service in its own process (src/server.ts through tsx), on this worker's schema of
 * TEST_DATABASE_URL, or on a fresh embedded database in a temporary folder.
 */
export async function startServerProcess(env: Record<string, string> = {}): Promise<ServerProcess> {
  const port = await freePort()
  const serverUrl = process.env.TEST_DATABASE_URL
  const dataDir = serverUrl ? undefined : await mkdtemp(path.join(tmpdir(), 'receivables-test-'))
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...(serverUrl ? { DATABASE_URL: databaseUrl(serverUrl, { schema: workerSchema() }) } : { PGLITE_DIR: dataDir ?? '' }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const output: string[] = []
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  void exited.then(() => (dataDir ? rm(dataDir, { recursive: true, force: true }) : undefined))
  const listening = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output.push(...String(chunk).split('\n').filter(Boolean))
      if (output.some((line) => line.includes('Server listening'))) resolve()
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    void exited.then((code) => reject(new Error(`server exited (${code}) before listening:\n${output.join('\n')}`)))
  })
  const timeout = setTimeout(() => child.kill('SIGKILL'), 60_000)
  await listening.finally(() => clearTimeout(timeout))
  return {
    child,
    baseUrl: `http://127.0.0.1:${port}`,
    output,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal)
      return exited
    },
  }
}

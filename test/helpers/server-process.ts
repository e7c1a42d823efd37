import { spawn, type ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach } from 'vitest'
import { databaseUrl } from './database-url.js'
import { freePort } from './ports.js'
import { seedDemoUnlessPresent } from '../../db/seed/demo.js'
import { createEmbeddedDatabase, migrateToLatest } from '../../src/db/database.js'
import { resetDatabase, testDatabase, workerSchema } from './database.js'
import { TEST_SECRETS } from './secrets.js'
import { scaled } from './slowness.js'

export interface ServerProcess {
  child: ChildProcess
  baseUrl: string
  output: string[]
  exited: Promise<number | null>
  /** The embedded database's folder, when the process runs on one; kept until cleanup(). */
  dataDir: string | undefined
  stop(signal?: NodeJS.Signals): Promise<number | null>
  /** Stops the process (SIGKILL if still running) and removes its embedded database. */
  cleanup(): Promise<void>
}

/** Polls /health/live (whatever the log level) until the process answers, or fails if it exits. */
async function waitUntilLive(baseUrl: string, exited: Promise<number | null>, output: string[]): Promise<void> {
  let exitCode: number | null | undefined
  void exited.then((code) => (exitCode = code))
  const bound = scaled(110_000)
  const deadline = Date.now() + bound
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`server exited (${exitCode}) before listening:\n${output.join('\n')}`)
    // Bounded: whatever else holds the port may accept and never answer.
    const live = await fetch(`${baseUrl}/health/live`, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.ok,
      () => false,
    )
    if (live) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`server did not listen within ${bound} ms:\n${output.join('\n')}`)
}

let template: Promise<string> | undefined

/**
 * An embedded database as a new one is at the service's first start (migrated, the demo data in),
 * made once per worker: each process gets a copy instead of migrating and seeding its own, which
 * took most of a start.
 */
function embeddedTemplate(): Promise<string> {
  template ??= (async () => {
    const parent = await mkdtemp(path.join(tmpdir(), 'receivables-template-'))
    process.once('exit', () => rmSync(parent, { recursive: true, force: true }))
    const dir = path.join(parent, 'pglite')
    const handle = await createEmbeddedDatabase(dir)
    await migrateToLatest(handle.db)
    await seedDemoUnlessPresent(handle.db)
    await handle.db.destroy()
    return dir
  })()
  return template
}

/**
 * The real service in its own process (src/server.ts through tsx), on this worker's schema of
 * TEST_DATABASE_URL, or on a fresh embedded database in a temporary folder.
 */
export async function startServerProcess(env: Record<string, string> = {}): Promise<ServerProcess> {
  // A given PORT is kept (the topology test restarts an instance where its gateway expects it).
  if (env.PORT) return startOnPort(Number(env.PORT), env)
  // Another process may take a free port before the server binds it: try another one.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnPort(await freePort(), env)
    } catch (error) {
      if (attempt === 3 || !(error instanceof PortInUse)) throw error
    }
  }
}

class PortInUse extends Error {}

async function startOnPort(port: number, env: Record<string, string>): Promise<ServerProcess> {
  const serverUrl = process.env.TEST_DATABASE_URL
  const dataDir = serverUrl ? undefined : await mkdtemp(path.join(tmpdir(), 'receivables-test-'))
  if (dataDir && !env.PGLITE_DIR) await cp(await embeddedTemplate(), dataDir, { recursive: true })
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      // Many processes at once: none serves metrics unless its test gives it a port.
      METRICS_PORT: '0',
      // As testConfig's (test/helpers/app.ts): the default 10 s stretched on a slow machine.
      HANDLER_TIMEOUT: `${Math.ceil(scaled(10_000) / 1000)}s`,
      // The test run's own secrets, as any DATABASE_URL requires (a test may replace or blank them).
      ...TEST_SECRETS,
      ...(serverUrl ? { DATABASE_URL: databaseUrl(serverUrl, { schema: workerSchema() }) } : { PGLITE_DIR: dataDir ?? '' }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const output: string[] = []
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const collect = (chunk: Buffer) => output.push(...String(chunk).split('\n').filter(Boolean))
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
  try {
    await waitUntilLive(`http://127.0.0.1:${port}`, exited, output)
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
    if (output.some((line) => line.includes(`port ${port} is in use`))) throw new PortInUse((error as Error).message)
    throw error
  }
  return {
    child,
    baseUrl: `http://127.0.0.1:${port}`,
    output,
    exited,
    dataDir,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
    async cleanup() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
      if (dataDir) await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * The frame of a test file that starts real service processes: the worker's database migrated and
 * reset before each test, and every process started through `start` stopped (its embedded
 * database removed) after it.
 */
export function useServerProcesses(): { start(env?: Record<string, string>): Promise<ServerProcess> } {
  let started: ServerProcess[] = []
  beforeEach(async () => {
    await testDatabase()
    await resetDatabase()
  })
  afterEach(async () => {
    await Promise.all(started.map((server) => server.cleanup()))
    started = []
  })
  return {
    async start(env = {}) {
      const server = await startServerProcess(env)
      started.push(server)
      return server
    },
  }
}

import { Server } from 'node:http'
import { setImmediate } from 'node:timers'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { DEMO_PASSWORD, seedDemoUnlessPresent } from '../db/seed/demo.js'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { DataDirInUse } from './db/data-dir-lock.js'
import { migrateToLatest, type DatabaseHandle } from './db/database.js'
import { openDatabase } from './db/open.js'
import { checkPortsBindable, portInUse } from './lib/port-check.js'
import { loggerOptions } from './logging.js'
import { listenAndAnnounce } from './observability/start-line.js'
import { startMetricsServer } from './plugins/metrics.js'

/**
 * `npm run dev`'s service (scripts/dev-runner.mjs). This file and the code under it are bundled
 * anew on every save and imported into the running process, which keeps the database open from one
 * version to the next: a reload builds the app again, instead of starting Node, loading PGlite's
 * WASM and checking migrations and the seed (1.8 s with `tsx watch` on a quiet machine, 15 s on a
 * busy one; CONTRIBUTING.md). The packages stay loaded (the bundle leaves them to node_modules),
 * so only our code is evaluated again.
 */

/** What one version of the code hands the next: the database, opened by the first. */
export interface DevState {
  database?: DatabaseHandle
}

export interface DevApp {
  app: FastifyInstance
  /** Listens (retrying while the previous version lets the port go), then starts the metrics server. */
  listen(): Promise<void>
  close(): Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Listens, retrying for a moment while the port is still the previous version's. */
async function listenRetrying(listen: () => Promise<unknown>, patienceMs: number): Promise<void> {
  const deadline = Date.now() + patienceMs
  for (;;) {
    try {
      await listen()
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() > deadline) throw error
      await sleep(10)
    }
  }
}

/** The database of the first version: the ports checked first, then opened, migrated and (new and embedded) seeded, as `npm start` does. */
async function openFirst(config: Config): Promise<DatabaseHandle> {
  await checkPortsBindable([
    { port: config.port, host: config.host },
    { port: config.metricsPort, host: config.metricsHost },
  ])
  const log = pino(loggerOptions(config.logLevel))
  return openDatabase(config, log, { seedNewEmbedded: config.demoData ? seedDemoUnlessPresent : undefined })
}

/**
 * This version's app on the database of `state` (opened here the first time), ready but not yet
 * listening: the runner closes the previous version only once this one is built, so that a
 * version that fails to build leaves the previous one serving.
 */
export async function createDevApp(state: DevState): Promise<DevApp> {
  const config = loadConfig()
  const reloading = state.database !== undefined
  if (!state.database) state.database = await openFirst(config)
  // A migration written since the last save applies now, as a restart would apply it.
  else if (state.database.kind === 'pglite') await migrateToLatest(state.database.db)
  const app = await buildApp(config, { database: state.database })
  await app.ready()
  return {
    app,
    async listen() {
      const login = config.databaseUrl === undefined ? { email: 'alice@acme.example', password: DEMO_PASSWORD } : undefined
      await listenRetrying(() => listenAndAnnounce(app, config, { login }), reloading ? 3_000 : 0)
      const { metricsPort } = config
      // The previous version's metrics server closes with its app, after its last requests: waited for in the background.
      if (metricsPort !== undefined) {
        void listenRetrying(() => startMetricsServer(app, metricsPort, config.metricsHost), 5_000).catch((error: unknown) =>
          app.log.error({ err: error }, 'metrics server not started'),
        )
      }
    },
    async close() {
      const closing = app.close()
      // No gateway races a dev server: its idle keep-alive connections go at once (the draining
      // plugin keeps them a second), so that a browser's next request reaches the new version.
      setImmediate(() => Server.prototype.closeIdleConnections.call(app.server))
      await closing
    },
  }
}

/** The one line for a start that cannot work (configuration, database folder, port), else undefined: the runner prints a stack. */
export function startProblem(error: unknown): string | undefined {
  if (error instanceof ConfigError) return `configuration error: ${error.message}`
  if (error instanceof DataDirInUse) return error.message
  try {
    return portInUse(error, loadConfig(), 'npm run dev')
  } catch {
    return undefined
  }
}

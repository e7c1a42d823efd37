import './require-node.js'
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { DEMO_PASSWORD, seedDemoUnlessPresent } from '../db/seed/demo.js'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { DataDirInUse } from './db/data-dir-lock.js'
import { demoAccountsIfMarkedProduction, markProductionAndFindDemoAccounts } from './db/production-mark.js'
import { checkPortsBindable, portInUse } from './lib/port-check.js'
import { lowerHelperThreadPriority } from './lib/thread-priority.js'
import { listenAndAnnounce } from './observability/start-line.js'
import { startMetricsServer } from './plugins/metrics.js'
import { confirmationPath } from './registration/confirmation.js'
import { listPendingUsers } from './registration/repository.js'

/**
 * OpenTelemetry, only when an OTLP endpoint is configured: loaded before the app is built, so that
 * its instrumentations see the server and the drivers. A computed specifier, so that the bundler
 * leaves it to dist/tracing.js (its own bundle) instead of folding the SDK into the service's.
 */
async function startTracing(): Promise<{ shutdownTracing(): Promise<void> } | undefined> {
  if (!process.env.OTEL_EXPORTER_OTLP_ENDPOINT && !process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined
  const specifier = './tracing.js'
  return (await import(specifier)) as { shutdownTracing(): Promise<void> }
}

/** A busy port: its one line, and exit 1; any other error goes on up. */
function exitIfPortInUse(error: unknown, config: Config): never {
  const busy = portInUse(error, config)
  if (!busy) throw error
  process.stderr.write(`${busy}\n`)
  process.exit(1)
}

/** Stops the start with one line on stderr, the app closed first. */
async function refuseStart(app: FastifyInstance, line: string): Promise<never> {
  process.stderr.write(`${line}\n`)
  await app.close().catch(() => undefined)
  process.exit(1)
}

/**
 * A production start marks the database production and looks for the demo accounts (one
 * statement): their passwords are published, so production refuses them unless ALLOW_DEMO_DATA=true
 * says a demo or staging deployment is meant; then the start line names them in a warning. A
 * database so marked is production for every instance on it, whatever its NODE_ENV (issue 42, item 5).
 */
async function demoAccountsAtStart(app: FastifyInstance, config: Config): Promise<string[]> {
  let accounts: string[]
  try {
    accounts = config.env === 'production' ? await markProductionAndFindDemoAccounts(app.db) : await demoAccountsIfMarkedProduction(app.db)
  } catch (error) {
    return refuseStart(app, `cannot check the database for demo accounts before serving: ${(error as Error).message.split('\n')[0]}`)
  }
  if (accounts.length > 0 && !config.allowDemoData) {
    return refuseStart(
      app,
      `the database holds the demo accounts ${accounts.join(', ')}, whose passwords are published (docs/demo-data.md): ` +
        'remove the demo data with `npm run unseed` (in the image: `node dist/unseed.js`), ' +
        'or set ALLOW_DEMO_DATA=true if a demo or staging deployment is meant',
    )
  }
  return accounts
}

/**
 * The embedded demo only: a confirmation link (route 10) for each migrated account awaiting one, as
 * `npm run confirmation-link` prints, which cannot open the folder while the service holds it.
 */
async function announceDemoConfirmationLinks(app: FastifyInstance, config: Config, url: string): Promise<void> {
  for (const user of await listPendingUsers(app.db)) {
    const link = `${config.publicBaseUrl ?? url}${confirmationPath(user, config.legacySecretKey)}`
    app.log.info({ email: user.email, link }, `demo confirmation link (route 10) for ${user.email}: ${link}`)
  }
}

/** Entry point: validate the environment, build the app, listen, and shut down gracefully. */
async function main(): Promise<void> {
  let config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`)
      process.exit(1)
    }
    throw error
  }
  // Ports first: one another process holds is named at once, before the database is opened.
  await checkPortsBindable([
    { port: config.port, host: config.host },
    { port: config.metricsPort, host: config.metricsHost },
  ]).catch((error: unknown) => exitIfPortInUse(error, config))
  const tracing = await startTracing()
  // A new embedded database gets the demo data (docs/api.md §5); DATABASE_URL never does.
  const app = await buildApp(config, { seedNewEmbedded: seedDemoUnlessPresent }).catch((error: unknown) => {
    if (!(error instanceof DataDirInUse)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exit(1)
  })
  const demoAccounts = await demoAccountsAtStart(app, config)
  // SIGTERM: readiness 503 and Connection: close at once, serve on for DRAIN_DELAY (the gateway and
  // the orchestrator stop sending), then stop accepting, finish requests in flight, close the pool
  // and exit 0; all within SHUTDOWN_TIMEOUT, else exit 1. SIGINT (a terminal) skips the delay.
  closeWithGrace({ delay: config.drain.shutdownTimeoutMs }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an uncaught error')
    else app.log.info({ signal, drainDelayMs: config.drain.delayMs }, 'shutting down')
    app.startDraining()
    if (signal === 'SIGTERM' && config.drain.delayMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, config.drain.delayMs))
      app.log.info('drain delay over: closing the listener')
    }
    await app.close()
    await tracing?.shutdownTracing()
  })
  try {
    // The embedded database is the demo: its login is printed with the URL.
    const login = config.databaseUrl === undefined ? { email: 'alice@acme.example', password: DEMO_PASSWORD } : undefined
    const url = await listenAndAnnounce(app, config, { login, accounts: demoAccounts })
    if (login && config.demoData) await announceDemoConfirmationLinks(app, config, url)
    if (config.metricsPort !== undefined) await startMetricsServer(app, config.metricsPort, config.metricsHost)
  } catch (error) {
    exitIfPortInUse(error, config)
  }
  // Password hashing runs on these threads; the event loop must keep the CPU it needs (issue 6).
  const lowered = await lowerHelperThreadPriority(config.helperThreadNiceness)
  app.log.debug({ threads: lowered, niceness: config.helperThreadNiceness }, 'helper threads lowered in priority')
}

await main()

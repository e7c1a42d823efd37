import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { lowerHelperThreadPriority } from './lib/thread-priority.js'
import { listenAndAnnounce } from './observability/start-line.js'
import { startMetricsServer } from './plugins/metrics.js'

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
  const tracing = await startTracing()
  const app = await buildApp(config)
  // SIGTERM/SIGINT: stop accepting connections, finish requests in flight, close the pool, exit 0.
  closeWithGrace({ delay: 15_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an uncaught error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
    await tracing?.shutdownTracing()
  })
  await listenAndAnnounce(app, config)
  if (config.metricsPort !== undefined) await startMetricsServer(app, config.metricsPort, config.host)
  // Password hashing runs on these threads; the event loop must keep the CPU it needs (issue 6).
  const lowered = await lowerHelperThreadPriority(config.helperThreadNiceness)
  app.log.debug({ threads: lowered, niceness: config.helperThreadNiceness }, 'helper threads lowered in priority')
}

await main()

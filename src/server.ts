import closeWithGrace from 'close-with-grace'
import { seedDemoUnlessPresent } from '../db/seed/demo.js'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { lowerHelperThreadPriority } from './lib/thread-priority.js'

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
  // A new embedded database gets the demo data (CONTRACT.md §5); DATABASE_URL never does.
  const app = await buildApp(config, { seedNewEmbedded: seedDemoUnlessPresent })
  // SIGTERM/SIGINT: stop accepting connections, finish requests in flight, close the pool, exit 0.
  closeWithGrace({ delay: 15_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an uncaught error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
  })
  await app.listen({ port: config.port, host: config.host })
  // Password hashing runs on these threads; the event loop must keep the CPU it needs (issue 6).
  const lowered = await lowerHelperThreadPriority(config.helperThreadNiceness)
  app.log.debug({ threads: lowered, niceness: config.helperThreadNiceness }, 'helper threads lowered in priority')
}

await main()

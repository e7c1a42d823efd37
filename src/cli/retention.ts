import '../require-node.js'
import { loadDatabaseSettings, parseDuration } from '../config.js'
import { countRetention, runRetention, type RetentionOptions } from '../retention/retention.js'
import { CommandError, describeDatabaseWork, openCommandDatabase, parseFlags, runCommand } from './common.js'

/**
 * `npm run retention`: deletes, in small batches, token families that ended and webhook deliveries
 * past their retention (src/retention/retention.ts). Reads only the database location and its own
 * settings, so that it runs with the database credentials alone (no JWT or webhook secrets).
 * `--dry-run` counts what it would delete and deletes nothing.
 */
function options(env: NodeJS.ProcessEnv): RetentionOptions {
  const duration = (name: string, fallback: string) => {
    try {
      return parseDuration(env[name] ?? fallback)
    } catch {
      throw new CommandError(`configuration error: ${name}: not a duration (e.g. 30d, 12h): ${env[name]}`)
    }
  }
  const batchSize = Number(env.RETENTION_BATCH_SIZE ?? '5000')
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
    throw new CommandError(`configuration error: RETENTION_BATCH_SIZE: an integer from 1 to 100000: ${env.RETENTION_BATCH_SIZE}`)
  }
  return {
    tokenFamilyRetention: duration('TOKEN_FAMILY_RETENTION', '30d'),
    webhookDeliveryRetention: duration('WEBHOOK_DELIVERY_RETENTION', '90d'),
    webhookRetryWindow: duration('WEBHOOK_RETRY_WINDOW', '7d'),
    batchSize,
  }
}

const flags = parseFlags(process.argv.slice(2), ['--dry-run'], 'npm run retention [-- --dry-run]')

// A failure is one line naming the cause and the fix (src/cli/common.ts), like the other commands.
await runCommand('retention', async () => {
  const retention = options(process.env)
  const settings = loadDatabaseSettings()
  const handle = await openCommandDatabase(settings)
  try {
    if (flags.has('--dry-run')) {
      const would = await countRetention(handle.db, retention)
      process.stdout.write(
        `dry run, nothing deleted: ${would.tokenFamilies} token families, ${would.webhookDeliveries} webhook deliveries, ${would.idempotencyKeys} idempotency keys would be deleted\n`,
      )
    } else await runRetention(handle.db, retention, (line) => process.stdout.write(`${new Date().toISOString()} ${line}\n`))
  } catch (error) {
    throw describeDatabaseWork(settings, error)
  } finally {
    await handle.db.destroy()
  }
})

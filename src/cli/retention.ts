import { parseDuration } from '../config.js'
import { createEmbeddedDatabase, createPostgresDatabase } from '../db/database.js'
import { runRetention, type RetentionOptions } from '../retention/retention.js'

/**
 * `npm run retention`: deletes, in small batches, token families that ended and webhook deliveries
 * past their retention (src/retention/retention.ts). Reads only the database location and its own
 * settings, so that it runs with the database credentials alone (no JWT or webhook secrets).
 */
function options(env: NodeJS.ProcessEnv): RetentionOptions {
  const duration = (name: string, fallback: string) => {
    try {
      return parseDuration(env[name] ?? fallback)
    } catch {
      throw new Error(`${name}: not a duration (e.g. 30d, 12h): ${env[name]}`)
    }
  }
  const batchSize = Number(env.RETENTION_BATCH_SIZE ?? '5000')
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
    throw new Error(`RETENTION_BATCH_SIZE: an integer from 1 to 100000: ${env.RETENTION_BATCH_SIZE}`)
  }
  return {
    tokenFamilyRetention: duration('TOKEN_FAMILY_RETENTION', '30d'),
    webhookDeliveryRetention: duration('WEBHOOK_DELIVERY_RETENTION', '90d'),
    webhookRetryWindow: duration('WEBHOOK_RETRY_WINDOW', '7d'),
    batchSize,
  }
}

const settings = options(process.env)
const handle = process.env.DATABASE_URL
  ? createPostgresDatabase({ connectionString: process.env.DATABASE_URL, poolSize: 1, preparedStatements: false })
  : await createEmbeddedDatabase(process.env.PGLITE_DIR ?? './data/pglite')
try {
  await runRetention(handle.db, settings, (line) => process.stdout.write(`${new Date().toISOString()} ${line}\n`))
} finally {
  await handle.db.destroy()
}

import type { FastifyBaseLogger } from 'fastify'
import { isDemoSeeded, seedDemoData } from '../../db/seed/demo.js'
import type { Config } from '../config.js'
import { createEmbeddedDatabase, createPostgresDatabase, migrateToLatest, type DatabaseHandle } from './database.js'

/**
 * The service's database: PostgreSQL when DATABASE_URL is set (migrations and demo data are then
 * explicit commands), else the embedded PGlite in PGLITE_DIR, migrated at start and given the demo
 * data when it is new.
 */
export async function openDatabase(config: Config, log: FastifyBaseLogger): Promise<DatabaseHandle> {
  if (config.databaseUrl) {
    return createPostgresDatabase({
      connectionString: config.databaseUrl,
      poolSize: config.databasePoolSize,
      preparedStatements: config.databasePreparedStatements,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      onConfigurationError: (message) => log.error({ configurationError: true }, `database configuration error: ${message}`),
    })
  }
  const handle = await createEmbeddedDatabase(config.pgliteDir)
  const applied = await migrateToLatest(handle.db)
  if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied')
  if (handle.created && !(await isDemoSeeded(handle.db))) {
    await seedDemoData(handle.db)
    log.info('demo data loaded into the new embedded database')
  }
  return handle
}

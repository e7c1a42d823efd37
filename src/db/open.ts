import type { FastifyBaseLogger } from 'fastify'
import { createEmbeddedDatabase, createPostgresDatabase, migrateToLatest, type DatabaseHandle } from './database.js'
import type { Db } from '../../db/types.js'

/** What this module reads of the configuration (src/config.ts), named here so that src/db/ does not import it. */
export interface DatabaseSettings {
  databaseUrl: string | undefined
  databasePoolSize: number
  databasePreparedStatements: boolean
  databaseConnectTimeoutMs: number
  databaseStatementTimeoutMs: number
  pgliteDir: string
}

export interface OpenOptions {
  /**
   * Fills a new embedded database. The embedded start (src/server.ts) passes the demo seed, so that
   * this generic path, shared by every caller, never reaches demo data.
   */
  seedNewEmbedded?: (db: Db) => Promise<void>
}

/**
 * The service's database: PostgreSQL when DATABASE_URL is set (migrations and demo data are then
 * explicit commands), else the embedded PGlite in PGLITE_DIR, migrated at start and seeded by
 * `seedNewEmbedded` when it is new.
 */
export async function openDatabase(config: DatabaseSettings, log: FastifyBaseLogger, options: OpenOptions = {}): Promise<DatabaseHandle> {
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
  if (handle.created && options.seedNewEmbedded) {
    await options.seedNewEmbedded(handle.db)
    log.info('demo data loaded into the new embedded database')
  }
  return handle
}

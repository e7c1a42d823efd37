import { Migrator, sql, type Kysely } from 'kysely'
import { afterAll, beforeAll } from 'vitest'
import { migrationProvider } from '../../db/migrations/index.js'
import type { Database } from '../../db/types.js'
import { createEmbeddedDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { openPostgres, workerSchema } from './database.js'

/**
 * For a migration's upgrade test: a database of its own (a schema on PostgreSQL, another in-memory
 * PGlite) migrated to `before`, given the rows of that layout by `arrange`, then migrated to the
 * latest (or `after`), so that the worker's shared database stays at the latest version throughout.
 */
export function useDatabaseUpgradedFrom(
  before: string,
  arrange: (db: Kysely<Database>) => Promise<void>,
  /** The version to upgrade to, when a later migration changes what the test reads. */
  after?: string,
): { readonly handle: DatabaseHandle; migrator(): Migrator } {
  const schema = `${workerSchema()}_from_${before.slice(0, 4)}`
  const url = process.env.TEST_DATABASE_URL
  let handle: DatabaseHandle | undefined
  const migrator = (db: Kysely<Database>) => new Migrator({ db, provider: migrationProvider, ...(url ? { migrationTableSchema: schema } : {}) })

  beforeAll(async () => {
    handle = url ? await openPostgres(url, schema, 2) : await createEmbeddedDatabase('memory://')
    const { error } = await migrator(handle.db).migrateTo(before)
    if (error) throw error
    await arrange(handle.db)
    const { error: upgradeError } = await (after ? migrator(handle.db).migrateTo(after) : migrator(handle.db).migrateToLatest())
    if (upgradeError) throw upgradeError
  })

  afterAll(async () => {
    if (!handle) return
    if (url) await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(handle.db)
    await handle.db.destroy()
  })

  const opened = () => {
    if (!handle) throw new Error('the upgraded database is opened in beforeAll')
    return handle
  }
  return {
    get handle() {
      return opened()
    },
    /** To migrate it down and up again (a migration's down()). */
    migrator: () => migrator(opened().db),
  }
}

import { sql, type Kysely } from 'kysely'
import { afterAll, beforeAll } from 'vitest'
import { seedDemoData } from '../../db/seed/demo.js'
import type { Database } from '../../db/types.js'
import { createPostgresDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db/database.js'
import { StatementLog } from '../platform/plan-check.js'
import { runSchemaPrefix } from './database.js'

/**
 * A schema of its own on the real PostgreSQL at `databaseUrl`, migrated and seeded with the demo data
 * (then `arrange`d), whose every statement the returned log records: for tests that count or plan
 * the statements a route runs. Dropped after the file's tests.
 */
export function useLoggedSchema(
  databaseUrl: string,
  name: string,
  { poolSize = 2, arrange }: { poolSize?: number; arrange?: (db: Kysely<Database>) => Promise<void> } = {},
): { readonly log: StatementLog; readonly schema: string; readonly handle: DatabaseHandle } {
  const schema = `${runSchemaPrefix(process.ppid)}${name}`
  const log = new StatementLog()
  let handle: DatabaseHandle | undefined
  const dropSchema = async () => {
    const admin = createPostgresDatabase({ connectionString: databaseUrl, poolSize: 1 })
    await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(admin.db)
    return admin
  }

  beforeAll(async () => {
    const admin = await dropSchema()
    await sql`CREATE SCHEMA ${sql.id(schema)}`.execute(admin.db)
    await admin.db.destroy()
    handle = createPostgresDatabase({ connectionString: databaseUrl, poolSize, schema, preparedStatements: true, log: log.log })
    await migrateToLatest(handle.db, schema)
    await seedDemoData(handle.db)
    await arrange?.(handle.db)
  })

  afterAll(async () => {
    await handle?.db.destroy()
    await (await dropSchema()).db.destroy()
  })

  return {
    log,
    schema,
    get handle() {
      if (!handle) throw new Error('the logged schema is opened in beforeAll')
      return handle
    },
  }
}

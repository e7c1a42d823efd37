import { sql } from 'kysely'
import { seedDemoData, truncateAll } from '../../db/seed/demo.js'
import { createEmbeddedDatabase, createPostgresDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db/database.js'

let shared: Promise<DatabaseHandle> | undefined

/**
 * This worker's schema on the real server, so that workers (and concurrent runs) never see each
 * other's rows. The parent pid names the run; test/global-setup.ts drops the run's schemas.
 */
export const runSchemaPrefix = (runPid: number): string => `test_run${runPid}_`
export const workerSchema = (): string => `${runSchemaPrefix(process.ppid)}${process.env.VITEST_POOL_ID ?? process.pid}`

/** A pool on `schema` of the server at `url`, the schema dropped and made anew first. */
export async function openPostgres(url: string, schema: string, poolSize = 10): Promise<DatabaseHandle> {
  const admin = createPostgresDatabase({ connectionString: url, poolSize: 1 })
  await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(admin.db)
  await sql`CREATE SCHEMA ${sql.id(schema)}`.execute(admin.db)
  await admin.db.destroy()
  return createPostgresDatabase({ connectionString: url, poolSize, schema, preparedStatements: true })
}

/** A new database `name` on the server `urlOf` addresses, migrated and holding the demo data. */
export async function createDemoDatabase(urlOf: (database: string) => string, name: string): Promise<void> {
  const admin = createPostgresDatabase({ connectionString: urlOf('postgres'), poolSize: 1 })
  try {
    await sql`CREATE DATABASE ${sql.id(name)}`.execute(admin.db)
  } finally {
    await admin.db.destroy()
  }
  const handle = createPostgresDatabase({ connectionString: urlOf(name), poolSize: 1 })
  try {
    await migrateToLatest(handle.db)
    await seedDemoData(handle.db)
  } finally {
    await handle.db.destroy()
  }
}

/**
 * The worker's database, migrated: PostgreSQL when TEST_DATABASE_URL is set, else an in-memory
 * PGlite. Created once per worker and shared by its test files.
 */
export function testDatabase(): Promise<DatabaseHandle> {
  shared ??= (async () => {
    const url = process.env.TEST_DATABASE_URL
    const schema = workerSchema()
    const handle = url ? await openPostgres(url, schema) : await createEmbeddedDatabase('memory://')
    await migrateToLatest(handle.db, url ? schema : undefined)
    return handle
  })()
  return shared
}

/** Empties every table and loads the demo data again, with dates relative to now. */
export async function resetDatabase(): Promise<void> {
  const { db } = await testDatabase()
  await truncateAll(db)
  await seedDemoData(db)
}

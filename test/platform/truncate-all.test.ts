import { sql, type Kysely } from 'kysely'
import { describe, expect, it } from 'vitest'
import { serviceTables, truncateAll } from '../../db/seed/demo.js'
import type { Database } from '../../db/types.js'
import { resetDatabase, testDatabase } from '../helpers/database.js'

/**
 * truncateAll (db/seed/demo.ts), the tests' reset, empties the tables of the handle's schema as
 * the catalogue lists them, not as a hand list does: a table a migration adds is emptied without
 * editing anything, and on PostgreSQL, where each worker has its own schema, no other schema is
 * touched. Inside a transaction rolled back at the end, so the worker's database is left as it was.
 */

/** The schema's tables but Kysely's bookkeeping, from information_schema rather than the function's own query. */
async function catalogueTables(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ table_name: string }>`
    SELECT table_name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'kysely!_migration%' ESCAPE '!'
     ORDER BY table_name`.execute(db)
  return rows.map((row) => row.table_name)
}

const count = async (db: Kysely<Database>, schema: string, table: string): Promise<number> =>
  Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.id(schema, table)}`.execute(db)).rows[0]!.n)

class RollBack extends Error {}

describe('truncateAll: the schema, not a list', () => {
  it("names exactly the schema's tables, Kysely's bookkeeping aside", async () => {
    const { db } = await testDatabase()
    const tables = await serviceTables(db)
    expect(tables.map((table) => table.table)).toEqual(await catalogueTables(db))
    expect(tables.map((table) => table.table)).toContain('users')
    expect(new Set(tables.map((table) => table.schema)).size).toBe(1)
  })

  it("empties a table a migration adds without a list to edit, and no table of another schema nor Kysely's bookkeeping", async () => {
    await resetDatabase()
    const { db } = await testDatabase()
    await expect(
      db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(trx)
        const schema = rows[0]!.schema
        const other = `${schema}_other`
        // What a migration would add: a table referencing the service's, with rows.
        await sql`CREATE TABLE throwaway_notes (id integer PRIMARY KEY, user_id uuid NOT NULL REFERENCES users (id))`.execute(trx)
        await sql`INSERT INTO throwaway_notes SELECT row_number() OVER (), id FROM users`.execute(trx)
        // Another schema's table (another worker's, on PostgreSQL), with a row.
        await sql`CREATE SCHEMA ${sql.id(other)}`.execute(trx)
        await sql`CREATE TABLE ${sql.id(other, 'kept')} (id integer)`.execute(trx)
        await sql`INSERT INTO ${sql.id(other, 'kept')} VALUES (1)`.execute(trx)
        const migrations = await count(trx, schema, 'kysely_migration')
        expect(await count(trx, schema, 'throwaway_notes')).toBeGreaterThan(0)

        await truncateAll(trx)

        const tables = await catalogueTables(trx)
        expect(tables).toContain('throwaway_notes')
        const left = await Promise.all(tables.map(async (table) => [table, await count(trx, schema, table)] as const))
        expect(left.filter(([, rows]) => rows > 0)).toEqual([])
        expect(await count(trx, other, 'kept')).toBe(1)
        expect(await count(trx, schema, 'kysely_migration')).toBe(migrations)
        throw new RollBack()
      }),
    ).rejects.toBeInstanceOf(RollBack)
    // Rolled back: the worker's tables are as the reset left them.
    expect(await count(db, (await serviceTables(db))[0]!.schema, 'users')).toBeGreaterThan(0)
  })
})

import { Migrator, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrationProvider } from '../../db/migrations/index.js'
import { createEmbeddedDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { openPostgres, workerSchema } from '../helpers/database.js'

/**
 * Migration 0011: a key is written with its answer (src/idempotency/), so the rows claimed without
 * one the previous way go, and the answer becomes required. On a database of its own, migrated to
 * 0009 first, so that the worker's shared database stays at the latest version.
 */
const schema = `${workerSchema()}_m10`
let handle: DatabaseHandle
const migrator = () =>
  new Migrator({ db: handle.db, provider: migrationProvider, ...(process.env.TEST_DATABASE_URL ? { migrationTableSchema: schema } : {}) })

beforeAll(async () => {
  const url = process.env.TEST_DATABASE_URL
  handle = url ? await openPostgres(url, schema, 2) : await createEmbeddedDatabase('memory://')
  const { error } = await migrator().migrateTo('0009_idempotency_keys')
  if (error) throw error
  await sql`
    INSERT INTO idempotency_keys (scope, route, key_hash, fingerprint, status, answer)
    VALUES ('user:a', 'POST /x', '\\x01', '\\x01', NULL, NULL),
           ('user:a', 'POST /x', '\\x02', '\\x02', 201, '\\x02')`.execute(handle.db)
  const { error: upgradeError } = await migrator().migrateTo('0011_idempotency_answer_with_work')
  if (upgradeError) throw upgradeError
}, 30_000)

afterAll(async () => {
  if (process.env.TEST_DATABASE_URL) await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(handle.db)
  await handle.db.destroy()
})

describe('migration 0011: every key row holds its answer', () => {
  it('deletes the keys claimed without an answer, keeps the answered ones, and refuses a row without one', async () => {
    const rows = await sql<{ status: number }>`SELECT status FROM idempotency_keys`.execute(handle.db)
    expect(rows.rows).toEqual([{ status: 201 }])
    await expect(
      sql`INSERT INTO idempotency_keys (scope, route, key_hash, fingerprint) VALUES ('user:a', 'POST /x', '\\x03', '\\x03')`.execute(handle.db),
    ).rejects.toThrow(/null value/)
  })
})

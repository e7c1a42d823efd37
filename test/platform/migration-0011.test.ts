import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { useDatabaseUpgradedFrom } from '../helpers/upgraded-database.js'

/**
 * Migration 0011: a key is written with its answer (src/idempotency/), so the rows claimed without
 * one the previous way go, and the answer becomes required. Upgraded from 0009.
 */
const upgraded = useDatabaseUpgradedFrom(
  '0009_idempotency_keys',
  async (db) => {
    await sql`
    INSERT INTO idempotency_keys (scope, route, key_hash, fingerprint, status, answer)
    VALUES ('user:a', 'POST /x', '\\x01', '\\x01', NULL, NULL),
           ('user:a', 'POST /x', '\\x02', '\\x02', 201, '\\x02')`.execute(db)
  },
  '0011_idempotency_answer_with_work',
)

describe('migration 0011: every key row holds its answer', () => {
  it('deletes the keys claimed without an answer, keeps the answered ones, and refuses a row without one', async () => {
    const rows = await sql<{ status: number }>`SELECT status FROM idempotency_keys`.execute(upgraded.handle.db)
    expect(rows.rows).toEqual([{ status: 201 }])
    await expect(
      sql`INSERT INTO idempotency_keys (scope, route, key_hash, fingerprint) VALUES ('user:a', 'POST /x', '\\x03', '\\x03')`.execute(
        upgraded.handle.db,
      ),
    ).rejects.toThrow(/null value/)
  })
})

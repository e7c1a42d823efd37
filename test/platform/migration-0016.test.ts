import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { seedDemoData } from '../../db/seed/demo.js'
import { buildApp } from '../../src/app.js'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { newJti } from '../../src/tokens/tokens.js'
import { DEMO, problemOf, testConfig } from '../helpers/app.js'
import { accessClaims, decodeClaims, forgeHs256 } from '../helpers/jwt.js'
import { useDatabaseUpgradedFrom } from '../helpers/upgraded-database.js'

/**
 * Migration 0016 (issue 45) moves each family's rotating part (current and previous jti, the
 * successor's term) out of `token_families` into `token_family_rotations`. Sessions open during
 * the upgrade must survive it: a current token still rotates, a token rotated seconds before is
 * still a retry within the grace, an older one still a replay. Upgraded from 0013.
 */
const refreshToken = (jti: string, familyId: string): string => forgeHs256(accessClaims(DEMO.users.alice, familyId, { token_type: 'refresh', jti }))

/** `rotated`: its `previous` was spent a second ago for `current`; `fresh`: never rotated. */
const rotated = { id: randomUUID(), older: newJti(), previous: newJti(), current: newJti() }
const fresh = { id: randomUUID(), current: newJti() }

const upgraded = useDatabaseUpgradedFrom('0013_idempotency_keys_compact', async (db) => {
  await seedDemoData(db)
  await sql`
    INSERT INTO token_families (id, user_id, absolute_expires_at, current_refresh_jti, previous_refresh_jti, current_refresh_issued_at, current_refresh_expires_at)
    VALUES (${rotated.id}, ${DEMO.users.alice}, now() + interval '30 days', ${rotated.current}, ${rotated.previous},
            date_trunc('second', now()) - interval '1 second', date_trunc('second', now()) + interval '1 day'),
           (${fresh.id}, ${DEMO.users.alice}, now() + interval '30 days', ${fresh.current}, NULL, NULL, NULL)`.execute(db)
})

const columnsOf = async (table: string) =>
  (
    await sql<{ name: string }>`
      SELECT column_name AS name FROM information_schema.columns WHERE table_name = ${table} AND table_schema = current_schema()
       ORDER BY ordinal_position`.execute(upgraded.handle.db)
  ).rows.map((column) => column.name)

describe('migration 0016: a token family’s rotating part in a table of its own', () => {
  it('keeps the sessions of the moment: a current token rotates, a retry within the grace gets the stored successor, an older token is a replay', async () => {
    const app = await buildApp(testConfig(), { database: upgraded.handle, counterStore: new MemoryCounterStore() })
    try {
      const refresh = (token: string) => app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
      const first = await refresh(refreshToken(fresh.current, fresh.id))
      expect(first.statusCode).toBe(200)
      expect((await refresh(first.json().refresh)).statusCode).toBe(200)

      const retried = await refresh(refreshToken(rotated.previous, rotated.id))
      expect(retried.statusCode).toBe(200)
      expect(decodeClaims(retried.json().refresh).jti).toBe(rotated.current)
      problemOf(await refresh(refreshToken(rotated.older, rotated.id)), 401, 'token_not_valid')
      const { rows } = await sql<{ revoked_reason: string | null }>`
        SELECT revoked_reason FROM token_families WHERE id = ${rotated.id}`.execute(upgraded.handle.db)
      expect(rows).toEqual([{ revoked_reason: 'reuse' }])
    } finally {
      await app.close()
    }
  })

  it('leaves token_families without the rotating columns, the new table with room on its pages, and its down() puts them back', async () => {
    expect(await columnsOf('token_families')).toEqual(['id', 'user_id', 'created_at', 'absolute_expires_at', 'revoked_at', 'revoked_reason'])
    const { rows } = await sql<{ options: string[] }>`
      SELECT reloptions AS options FROM pg_class WHERE oid = 'token_family_rotations'::regclass`.execute(upgraded.handle.db)
    expect(rows[0]?.options).toContain('fillfactor=50')

    const { error } = await upgraded.migrator().migrateTo('0013_idempotency_keys_compact')
    if (error) throw error
    const back = await sql<{ id: string; current_refresh_jti: string | null }>`
      SELECT id, current_refresh_jti FROM token_families WHERE id IN (${fresh.id}, ${rotated.id}) ORDER BY id`.execute(upgraded.handle.db)
    expect(back.rows.every((row) => row.current_refresh_jti !== null)).toBe(true)
    const { error: upError } = await upgraded.migrator().migrateToLatest()
    if (upError) throw upError
    expect(await columnsOf('token_family_rotations')).toContain('current_refresh_jti')
  })
})

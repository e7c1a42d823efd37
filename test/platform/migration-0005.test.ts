import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { seedDemoData } from '../../db/seed/demo.js'
import { newJti } from '../../src/tokens/tokens.js'
import { buildTestApp, DEMO, problemOf } from '../helpers/app.js'
import { accessClaims, forgeHs256 } from '../helpers/jwt.js'
import { useDatabaseUpgradedFrom } from '../helpers/upgraded-database.js'

/**
 * Migration 0005 moves each family's live refresh token from `refresh_tokens` into the family row.
 * Sessions open during the upgrade must survive it, and spent tokens must still count as replays.
 * Upgraded from 0004.
 */

/** A refresh token as the service signed them before and after 0005 (same claims, same key). */
const refreshToken = (jti: string, familyId: string): string => forgeHs256(accessClaims(DEMO.users.alice, familyId, { token_type: 'refresh', jti }))

const family = { id: randomUUID(), spent: newJti(), live: newJti() }

const upgraded = useDatabaseUpgradedFrom('0004_cheaper_key_checks', async (db) => {
  await seedDemoData(db)
  // The layout before 0005: a row per refresh token, the spent one and its unspent successor.
  await sql`
    INSERT INTO token_families (id, user_id, absolute_expires_at)
    VALUES (${family.id}, ${DEMO.users.alice}, now() + interval '30 days')`.execute(db)
  await sql`
    INSERT INTO refresh_tokens (jti, family_id, expires_at, spent_at, created_at)
    VALUES (${family.spent}, ${family.id}, now() + interval '1 day', now(), now() - interval '1 hour'),
           (${family.live}, ${family.id}, now() + interval '1 day', NULL, now())`.execute(db)
})

describe('migration 0005: the live refresh token moves into its family', () => {
  it('keeps the family’s unspent token usable and counts its spent one as a replay (route 3)', async () => {
    const app = await buildTestApp({}, { database: upgraded.handle, conformance: false })
    try {
      const refresh = (token: string) => app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
      const rotated = await refresh(refreshToken(family.live, family.id))
      expect(rotated.statusCode).toBe(200)
      expect((await refresh(rotated.json().refresh)).statusCode).toBe(200)

      problemOf(await refresh(refreshToken(family.spent, family.id)), 401, 'token_not_valid')
      const { rows } = await sql<{ revoked_reason: string | null }>`
        SELECT revoked_reason FROM token_families WHERE id = ${family.id}`.execute(upgraded.handle.db)
      expect(rows).toEqual([{ revoked_reason: 'reuse' }])
    } finally {
      await app.close()
    }
  })

  it('drops refresh_tokens, and its down() brings it back with each family’s current token', async () => {
    const tables = async () =>
      (await sql<{ name: string }>`SELECT to_regclass('refresh_tokens')::text AS name`.execute(upgraded.handle.db)).rows[0]?.name ?? null
    expect(await tables()).toBeNull()
    const { error } = await upgraded.migrator().migrateTo('0004_cheaper_key_checks')
    if (error) throw error
    expect(await tables()).toBe('refresh_tokens')
    const { rows } = await sql<{ family_id: string; spent_at: Date | null }>`
      SELECT family_id, spent_at FROM refresh_tokens`.execute(upgraded.handle.db)
    expect(rows).toEqual([{ family_id: family.id, spent_at: null }])
    const { error: upgradeError } = await upgraded.migrator().migrateToLatest()
    if (upgradeError) throw upgradeError
  })
})

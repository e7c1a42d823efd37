import { randomUUID } from 'node:crypto'
import { Migrator, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrationProvider } from '../../db/migrations/index.js'
import { seedDemoData } from '../../db/seed/demo.js'
import { buildApp } from '../../src/app.js'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { newJti } from '../../src/tokens/tokens.js'
import { createEmbeddedDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { DEMO, problemOf, testConfig } from '../helpers/app.js'
import { openPostgres, workerSchema } from '../helpers/database.js'
import { accessClaims, forgeHs256 } from '../helpers/jwt.js'

/**
 * Migration 0005 moves each family's live refresh token from `refresh_tokens` into the family row.
 * Sessions open during the upgrade must survive it, and spent tokens must still count as replays.
 * Runs on a database of its own (a schema on PostgreSQL, another in-memory PGlite), migrated to
 * 0004 first, so that the worker's shared database stays at the latest version.
 */
const schema = `${workerSchema()}_m5`
let handle: DatabaseHandle
const migrator = () =>
  new Migrator({ db: handle.db, provider: migrationProvider, ...(process.env.TEST_DATABASE_URL ? { migrationTableSchema: schema } : {}) })

async function openFreshDatabase(): Promise<DatabaseHandle> {
  const url = process.env.TEST_DATABASE_URL
  return url ? openPostgres(url, schema, 2) : createEmbeddedDatabase('memory://')
}

/** A refresh token as the service signed them before and after 0005 (same claims, same key). */
const refreshToken = (jti: string, familyId: string): string => forgeHs256(accessClaims(DEMO.users.alice, familyId, { token_type: 'refresh', jti }))

const family = { id: randomUUID(), spent: newJti(), live: newJti() }

beforeAll(async () => {
  handle = await openFreshDatabase()
  const { error } = await migrator().migrateTo('0004_cheaper_key_checks')
  if (error) throw error
  await seedDemoData(handle.db)
  // The layout before 0005: a row per refresh token, the spent one and its unspent successor.
  await sql`
    INSERT INTO token_families (id, user_id, absolute_expires_at)
    VALUES (${family.id}, ${DEMO.users.alice}, now() + interval '30 days')`.execute(handle.db)
  await sql`
    INSERT INTO refresh_tokens (jti, family_id, expires_at, spent_at, created_at)
    VALUES (${family.spent}, ${family.id}, now() + interval '1 day', now(), now() - interval '1 hour'),
           (${family.live}, ${family.id}, now() + interval '1 day', NULL, now())`.execute(handle.db)
  const { error: upgradeError } = await migrator().migrateToLatest()
  if (upgradeError) throw upgradeError
}, 30_000)

afterAll(async () => {
  if (process.env.TEST_DATABASE_URL) await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(handle.db)
  await handle.db.destroy()
})

describe('migration 0005: the live refresh token moves into its family', () => {
  it('keeps the family’s unspent token usable and counts its spent one as a replay (route 3)', async () => {
    const app = await buildApp(testConfig(), { database: handle, counterStore: new MemoryCounterStore() })
    try {
      const refresh = (token: string) => app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
      const rotated = await refresh(refreshToken(family.live, family.id))
      expect(rotated.statusCode).toBe(200)
      expect((await refresh(rotated.json().refresh)).statusCode).toBe(200)

      problemOf(await refresh(refreshToken(family.spent, family.id)), 401, 'token_not_valid')
      const { rows } = await sql<{ revoked_reason: string | null }>`
        SELECT revoked_reason FROM token_families WHERE id = ${family.id}`.execute(handle.db)
      expect(rows).toEqual([{ revoked_reason: 'reuse' }])
    } finally {
      await app.close()
    }
  })

  it('drops refresh_tokens, and its down() brings it back with each family’s current token', async () => {
    const tables = async () =>
      (await sql<{ name: string }>`SELECT to_regclass('refresh_tokens')::text AS name`.execute(handle.db)).rows[0]?.name ?? null
    expect(await tables()).toBeNull()
    const { error } = await migrator().migrateTo('0004_cheaper_key_checks')
    if (error) throw error
    expect(await tables()).toBe('refresh_tokens')
    const { rows } = await sql<{ family_id: string; spent_at: Date | null }>`
      SELECT family_id, spent_at FROM refresh_tokens`.execute(handle.db)
    expect(rows).toEqual([{ family_id: family.id, spent_at: null }])
    const { error: upgradeError } = await migrator().migrateToLatest()
    if (upgradeError) throw upgradeError
  })
})

import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { countRetention, runRetention, type RetentionOptions } from '../../src/retention/retention.js'
import { DEMO, DEMO_PASSWORD, bearer, obtainTokens, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import { notification, postWebhook, sha256Hex } from '../webhooks/helpers.js'

const context = useTestApp()
const DAY = 86_400
const OPTIONS: RetentionOptions = { tokenFamilyRetention: 30 * DAY, webhookDeliveryRetention: 90 * DAY, webhookRetryWindow: 7 * DAY, batchSize: 3 }
const db = async () => (await testDatabase()).db

async function family(ageDays: number, lifetimeDays: number, revokedDaysAgo: number | null): Promise<string> {
  const row = await sql<{ id: string }>`
    INSERT INTO token_families (user_id, created_at, absolute_expires_at, revoked_at, revoked_reason)
    VALUES (${DEMO.users.alice}, now() - ${ageDays} * interval '1 day', now() - ${ageDays - lifetimeDays} * interval '1 day',
            CASE WHEN ${revokedDaysAgo}::int IS NOT NULL THEN now() - ${revokedDaysAgo}::int * interval '1 day' END,
            CASE WHEN ${revokedDaysAgo}::int IS NOT NULL THEN 'logout' END)
    RETURNING id`.execute(await db())
  return row.rows[0]!.id
}

async function delivery(ageDays: number, n: number): Promise<string> {
  const row = await sql<{ id: string }>`
    INSERT INTO webhook_deliveries (provider, dedupe_key, raw_body, received_at)
    VALUES ('esign', ${sha256Hex(`old ${n}`)}, ${Buffer.from(`{"old":${n}}`)}, now() - ${ageDays} * interval '1 day')
    RETURNING id`.execute(await db())
  return row.rows[0]!.id
}

const existing = async (table: 'token_families' | 'webhook_deliveries', ids: string[]) =>
  (await (await db()).selectFrom(table).select('id').where('id', 'in', ids).execute()).map((row) => row.id).sort()

describe('retention (npm run retention)', () => {
  it('deletes token families that ended more than the retention ago, and keeps the others', async () => {
    const gone = [await family(100, 30, null), await family(45, 30, 40), await family(200, 30, 199)]
    const kept = [await family(50, 30, null), await family(10, 30, null), await family(10, 30, 5), await family(59, 30, 29)]
    const report = await runRetention(await db(), OPTIONS)
    expect(report.tokenFamilies).toBe(3)
    expect(await existing('token_families', [...gone, ...kept])).toEqual([...kept].sort())
  })

  it('--dry-run counts what a run would delete, and deletes nothing', async () => {
    const ids = [await family(100, 30, null), await family(10, 30, null), await delivery(120, 1), await delivery(1, 2)]
    const counted = await countRetention(await db(), OPTIONS)
    expect(counted).toEqual({ tokenFamilies: 1, webhookDeliveries: 1, idempotencyKeys: 0 })
    expect([...(await existing('token_families', ids)), ...(await existing('webhook_deliveries', ids))].sort()).toEqual([...ids].sort())
    expect(await runRetention(await db(), OPTIONS)).toEqual(counted)
  })

  it('deletes webhook deliveries past the retention in batches, with progress, and keeps the younger ones', async () => {
    const gone = await Promise.all([91, 100, 120, 200, 365].map((age, n) => delivery(age, n)))
    const kept = await Promise.all([89, 30, 1].map((age, n) => delivery(age, 100 + n)))
    const lines: string[] = []
    const report = await runRetention(await db(), OPTIONS, (line) => lines.push(line))
    expect(report.webhookDeliveries).toBe(5)
    expect(await existing('webhook_deliveries', [...gone, ...kept])).toEqual([...kept].sort())
    expect(lines).toContain('webhook deliveries: 3 deleted')
    expect(lines).toContain('webhook deliveries: 5 deleted')
    expect(lines.at(-1)).toMatch(/^done: 0 token families, 5 webhook deliveries, 0 idempotency keys deleted$/)
  })

  it('never deletes a delivery within the retry window, so a repeat is still recognised by route 12', async () => {
    const body = notification('sign', '2026-01-02T10:00:00.000Z', { signer: 'alice@acme.example' })
    const first = await postWebhook(context.app, body)
    expect(first.json()).toEqual({ received: true, duplicate: false })
    await sql`UPDATE webhook_deliveries SET received_at = now() - interval '6 days'`.execute(await db())
    // A retention shorter than the retry window is held to the window.
    const report = await runRetention(await db(), { ...OPTIONS, webhookDeliveryRetention: DAY })
    expect(report.webhookDeliveries).toBe(0)
    const again = await postWebhook(context.app, body)
    expect(again.statusCode).toBe(201)
    expect(again.json()).toEqual({ received: true, duplicate: true })
  })

  it('deletes Idempotency-Key answers older than 24 h in batches, and keeps the younger ones replaying', async () => {
    const bob = (await obtainTokens(context.app, 'bob@beta.example', DEMO_PASSWORD)).access
    const solicit = (key: string, sellerId: string) =>
      context.app.inject({
        method: 'POST',
        url: `/api/company/v1/${DEMO.roles.betaBuyer}/document-solicitation/${sellerId}`,
        headers: { ...bearer(bob), 'idempotency-key': key },
        payload: { document_types: ['cnpj_card'] },
      })
    expect((await solicit('young', DEMO.roles.acmeSeller)).statusCode).toBe(201)
    expect((await solicit('old', DEMO.roles.gammaSeller)).statusCode).toBe(201)
    // The newer of bob's two keys is the young one: the other is made old.
    await sql`UPDATE idempotency_keys SET created_at = now() - interval '25 hours'
               WHERE created_at = (SELECT max(created_at) FROM idempotency_keys)`.execute(await db())
    await sql`
      INSERT INTO idempotency_keys (key_id, fingerprint, status, answer, created_at)
      SELECT sha256(n::text::bytea), sha256(n::text::bytea), 201, sha256(n::text::bytea), now() - interval '2 days'
        FROM generate_series(1, 4) AS n`.execute(await db())
    const lines: string[] = []
    const report = await runRetention(await db(), OPTIONS, (line) => lines.push(line))
    expect(report.idempotencyKeys).toBe(5)
    expect(lines).toContain('idempotency keys: 3 deleted')
    expect(await (await db()).selectFrom('idempotency_keys').select('status').execute()).toEqual([{ status: 201 }])
    const replay = await solicit('young', DEMO.roles.acmeSeller)
    expect([replay.statusCode, replay.headers['idempotent-replayed']]).toEqual([201, 'true'])
  })

  it('leaves the live sessions working', async () => {
    const login = await context.app.inject({
      method: 'POST',
      url: '/api/auth/v1/token',
      payload: { email: 'bob@beta.example', password: DEMO_PASSWORD },
    })
    const { access, refresh } = login.json<{ access: string; refresh: string }>()
    await runRetention(await db(), { ...OPTIONS, tokenFamilyRetention: 0 })
    const companies = await context.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })
    expect(companies.statusCode).toBe(200)
    const refreshed = await context.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh } })
    expect(refreshed.statusCode).toBe(200)
  })
})

describe('the password-change trigger', () => {
  it('revokes the live families only, and leaves the long-expired ones as they are', async () => {
    const expired = await family(100, 30, null)
    const justExpired = await family(31, 30.5, null) // ended 12 hours ago: its last access tokens may still be in use
    const live = await family(1, 30, null)
    await (await db()).updateTable('users').set({ password_changed_at: new Date() }).where('id', '=', DEMO.users.alice).execute()
    const rows = await (
      await db()
    )
      .selectFrom('token_families')
      .select(['id', 'revoked_reason'])
      .where('id', 'in', [expired, justExpired, live])
      .execute()
    const reasons = Object.fromEntries(rows.map((row) => [row.id, row.revoked_reason]))
    expect(reasons).toEqual({ [expired]: null, [justExpired]: 'password_changed', [live]: 'password_changed' })
  })
})

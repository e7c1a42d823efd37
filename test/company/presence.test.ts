import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { PRESENCE_WRITE_INTERVAL_MS, PresenceTracker } from '../../src/tenancy/presence.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

const context = useTestApp()
const { roles } = DEMO
const UNKNOWN = 'ffffffff-0000-4000-8000-000000000000'

const url = (roleId: string, partnerId: string) => `/api/company/v1/${roleId}/chat/partners/${partnerId}/presence`
const db = async () => (await testDatabase()).db

let bob: string
beforeEach(async () => {
  bob = (await obtainTokens(context.app, 'bob@beta.example', DEMO_PASSWORD)).access
})

/**
 * Route 6. Presence is written after the answer is sent (a side write declared by companyRoute, src/tenancy/routes.ts):
 * the helper waits for that write, so that what a test reads next includes it.
 */
async function presence(partnerId: string, token = bob, roleId: string = roles.betaBuyer) {
  const response = await context.app.inject({ method: 'GET', url: url(roleId, partnerId), headers: bearer(token) })
  await context.app.presence.settled()
  return response
}

interface Presence {
  company_role_id: string
  status: string
  last_seen_at: string | null
}

async function lastSeen(roleId: string): Promise<Date | undefined> {
  const row = await (await db()).selectFrom('company_role_presence').select('last_seen_at').where('company_role_id', '=', roleId).executeTakeFirst()
  return row?.last_seen_at
}

async function setLastSeen(roleId: string, secondsAgo: number): Promise<Date> {
  const row = await (
    await db()
  )
    .insertInto('company_role_presence')
    .values({ company_role_id: roleId, last_seen_at: sql<Date>`now() - make_interval(secs => ${secondsAgo})` })
    .onConflict((conflict) => conflict.column('company_role_id').doUpdateSet((eb) => ({ last_seen_at: eb.ref('excluded.last_seen_at') })))
    .returning('last_seen_at')
    .executeTakeFirstOrThrow()
  return row.last_seen_at
}

describe('GET /api/company/v1/{company_role_id}/chat/partners/{partner_company_role_id}/presence', () => {
  it('shows Acme, seen 5 minutes ago in the demo data, as away to Beta', async () => {
    const response = await presence(roles.acmeSeller)
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({
      company_role_id: roles.acmeSeller,
      status: 'away',
      last_seen_at: (await lastSeen(roles.acmeSeller))?.toISOString(),
    })
  })

  it("marks a partner seen when it acts: alice's request for Acme turns Acme online for bob", async () => {
    const before = await lastSeen(roles.acmeSeller)
    const alice = (await obtainTokens(context.app, 'alice@acme.example', DEMO_PASSWORD)).access
    const aliceView = await presence(roles.betaBuyer, alice, roles.acmeSeller)
    // Bob has not acted for Beta yet in this test... but the login does not count, only role-scoped requests.
    expect(aliceView.statusCode).toBe(200)

    const after = await lastSeen(roles.acmeSeller)
    expect(after!.getTime()).toBeGreaterThan(before!.getTime())
    const body = (await presence(roles.acmeSeller)).json<Presence>()
    expect(body).toEqual({ company_role_id: roles.acmeSeller, status: 'online', last_seen_at: after?.toISOString() })
  })

  it("sees the caller's own activity from the other side: bob's request makes Beta online for alice", async () => {
    expect(await lastSeen(roles.betaBuyer)).toBeUndefined()
    const alice = (await obtainTokens(context.app, 'alice@acme.example', DEMO_PASSWORD)).access
    expect((await presence(roles.betaBuyer, alice, roles.acmeSeller)).json<Presence>()).toMatchObject({
      status: 'offline',
      last_seen_at: null,
    })
    await presence(roles.acmeSeller)
    expect((await presence(roles.betaBuyer, alice, roles.acmeSeller)).json<Presence>().status).toBe('online')
  })

  it('does not mark a role seen for a request that fails the membership check', async () => {
    const erin = (await obtainTokens(context.app, 'erin@acme.example', DEMO_PASSWORD)).access
    const before = await lastSeen(roles.acmeSeller)
    problemOf(await presence(roles.betaBuyer, erin, roles.acmeSeller), 403, 'permission_denied')
    expect(await lastSeen(roles.acmeSeller)).toEqual(before)
  })

  it('applies the thresholds: 1 minute online, 5 away, 20 offline', async () => {
    for (const [minutes, status] of [
      [1, 'online'],
      [5, 'away'],
      [20, 'offline'],
    ] as const) {
      const seen = await setLastSeen(roles.acmeSeller, minutes * 60)
      const body = (await presence(roles.acmeSeller)).json<Presence>()
      expect(body, `${minutes} minutes`).toEqual({ company_role_id: roles.acmeSeller, status, last_seen_at: seen.toISOString() })
    }
  })

  it('is offline with a null last_seen_at for a partner never seen, from either side of the conversation', async () => {
    const dave = (await obtainTokens(context.app, 'dave@delta.example', DEMO_PASSWORD)).access
    expect((await presence(roles.gammaSeller, dave, roles.deltaBuyer)).json()).toEqual({
      company_role_id: roles.gammaSeller,
      status: 'offline',
      last_seen_at: null,
    })
    const carol = (await obtainTokens(context.app, 'carol@gamma.example', DEMO_PASSWORD)).access
    expect((await presence(roles.deltaBuyer, carol, roles.gammaSeller)).json<Presence>().status).toBe('online')
  })

  it('writes presence at most once per 30 s per role', async () => {
    const alice = (await obtainTokens(context.app, 'alice@acme.example', DEMO_PASSWORD)).access
    await presence(roles.betaBuyer, alice, roles.acmeSeller)
    const first = await lastSeen(roles.acmeSeller)
    await presence(roles.betaBuyer, alice, roles.acmeSeller)
    expect(await lastSeen(roles.acmeSeller)).toEqual(first)

    // Another instance (no memory of the write) is held back by the SQL guard.
    context.app.presence.forget()
    await presence(roles.betaBuyer, alice, roles.acmeSeller)
    expect(await lastSeen(roles.acmeSeller)).toEqual(first)

    // Once the last write is older than the interval, the next request writes again.
    const old = await setLastSeen(roles.acmeSeller, PRESENCE_WRITE_INTERVAL_MS / 1000 + 1)
    context.app.presence.forget()
    await presence(roles.betaBuyer, alice, roles.acmeSeller)
    expect((await lastSeen(roles.acmeSeller))!.getTime()).toBeGreaterThan(old.getTime())
  })

  it('is 404 when the partner shares no conversation with the role', async () => {
    for (const partner of [roles.gammaSeller, roles.deltaSeller, roles.betaBuyer, UNKNOWN]) {
      problemOf(await presence(partner), 404, 'not_found')
    }
    const dave = (await obtainTokens(context.app, 'dave@delta.example', DEMO_PASSWORD)).access
    // Dave's Delta seller role has no conversation with Gamma; only his Delta buyer role has.
    problemOf(await presence(roles.gammaSeller, dave, roles.deltaSeller), 404, 'not_found')
  })

  it("is 404 for another tenant's company role", async () => {
    problemOf(await presence(roles.betaBuyer, bob, roles.acmeSeller), 404, 'not_found')
    problemOf(await presence(roles.acmeSeller, bob, UNKNOWN), 404, 'not_found')
  })

  it('is 403 permission_denied without the chat permission', async () => {
    const lucas = (await obtainTokens(context.app, 'lucas@legacy.example', 'legacy-password')).access
    problemOf(await presence(roles.acmeSeller, lucas), 403, 'permission_denied')
    await (
      await db()
    )
      .updateTable('memberships')
      .set({ permissions: ['chat'] })
      .where('user_id', '=', DEMO.users.lucas)
      .execute()
    expect((await presence(roles.acmeSeller, lucas)).statusCode).toBe(200)
  })

  it('is 401 without a token or with a bad one', async () => {
    problemOf(await context.app.inject({ method: 'GET', url: url(roles.betaBuyer, roles.acmeSeller) }), 401, 'not_authenticated')
    problemOf(await presence(roles.acmeSeller, 'not-a-token'), 401, 'token_not_valid')
  })

  it('is 400 for a malformed UUID', async () => {
    expect(problemOf(await presence('nope'), 400, 'invalid').errors).toHaveProperty('partner_company_role_id')
    expect(problemOf(await presence(roles.acmeSeller, bob, 'nope'), 400, 'invalid').errors).toHaveProperty('company_role_id')
  })
})

describe('PresenceTracker', () => {
  it('skips the write inside the interval by its own clock, and writes after it', async () => {
    const database = await db()
    const tracker = new PresenceTracker(database)
    const start = 1_000_000
    await tracker.markSeen(roles.gammaSeller, start)
    expect(await lastSeen(roles.gammaSeller)).toBeDefined()

    const old = await setLastSeen(roles.gammaSeller, 3600)
    await tracker.markSeen(roles.gammaSeller, start + PRESENCE_WRITE_INTERVAL_MS - 1)
    expect(await lastSeen(roles.gammaSeller)).toEqual(old)

    await tracker.markSeen(roles.gammaSeller, start + PRESENCE_WRITE_INTERVAL_MS)
    expect((await lastSeen(roles.gammaSeller))!.getTime()).toBeGreaterThan(old.getTime())
  })

  it('keeps roles apart', async () => {
    const tracker = new PresenceTracker(await db())
    await tracker.markSeen(roles.gammaSeller, 5_000)
    await tracker.markSeen(roles.deltaSeller, 5_001)
    expect(await lastSeen(roles.deltaSeller)).toBeDefined()
  })
})

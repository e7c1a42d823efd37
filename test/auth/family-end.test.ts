import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { testDatabase } from '../helpers/database.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { decodeClaims } from '../helpers/jwt.js'
import { linkFor } from '../registration/links.js'

/**
 * A family never outlives REFRESH_ABSOLUTE_TTL from its login (§2), and neither do its access
 * tokens: their `exp` is capped at the family's end wherever one is issued, and the per-request
 * principal query refuses a family past its end whatever the token's `exp` says.
 */
const ctx = useTestApp({ REFRESH_ABSOLUTE_TTL: '60', ACCESS_TOKEN_TTL: '1h' })
const { roles, titles } = DEMO

const refresh = (token: string) => ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })

/** The family's absolute end, in seconds since the epoch, as stored. */
async function familyEnd(token: string): Promise<number> {
  const { db } = await testDatabase()
  const family = await db
    .selectFrom('token_families')
    .select('absolute_expires_at')
    .where('id', '=', String(decodeClaims(token).fid))
    .executeTakeFirstOrThrow()
  return family.absolute_expires_at.getTime() / 1000
}

async function expectCappedAtFamilyEnd(access: string): Promise<void> {
  const { exp, iat } = decodeClaims(access) as { exp: number; iat: number }
  expect(exp).toBeLessThanOrEqual(await familyEnd(access))
  expect(exp - iat).toBeLessThanOrEqual(61) // not ACCESS_TOKEN_TTL's hour
  expect(exp).toBeGreaterThan(iat)
}

describe("an access token's exp is capped at its family's end", () => {
  it('at login (routes 1 and 2)', async () => {
    await expectCappedAtFamilyEnd((await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)).access)
    const login = await ctx.app.inject({ method: 'POST', url: '/api/auth/v1/login', payload: { email: 'bob@beta.example', password: DEMO_PASSWORD } })
    expect(login.statusCode).toBe(200)
    await expectCappedAtFamilyEnd(login.json<{ access: string }>().access)
  })

  it('at a refresh, and at its retry within the grace', async () => {
    const first = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const rotated = await refresh(first.refresh)
    expect(rotated.statusCode).toBe(200)
    await expectCappedAtFamilyEnd(rotated.json<{ access: string }>().access)
    const retried = await refresh(first.refresh)
    expect(retried.statusCode).toBe(200)
    await expectCappedAtFamilyEnd(retried.json<{ access: string }>().access)
  })

  it("at a migrated account's confirmation (route 10)", async () => {
    const confirmed = await ctx.app.inject({ method: 'POST', url: await linkFor('maria@legacy.example'), payload: {} })
    expect(confirmed.statusCode).toBe(201)
    await expectCappedAtFamilyEnd(confirmed.json<{ access: string }>().access)
  })
})

describe("a request after its family's end is 401, whatever the access token's exp", () => {
  it('on a user route and on company reads', async () => {
    const { db } = await testDatabase()
    const alice = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const bob = await obtainTokens(ctx.app, 'bob@beta.example', DEMO_PASSWORD)
    const requests = [
      { url: '/api/company/v1/get-user-companies', access: alice.access },
      { url: `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}`, access: bob.access },
      { url: `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`, access: bob.access },
      { url: `/api/company/v1/${roles.betaBuyer}/chat/partners/${roles.acmeSeller}/presence`, access: bob.access },
    ]
    for (const { url, access } of requests) {
      expect((await ctx.app.inject({ method: 'GET', url, headers: bearer(access) })).statusCode).toBe(200)
    }
    // The families end now; the tokens' exp (up to a minute away) has not passed.
    const fids = [alice.access, bob.access].map((token) => String(decodeClaims(token).fid))
    await db
      .updateTable('token_families')
      .set({ absolute_expires_at: sql<Date>`now() - interval '1 second'` })
      .where('id', 'in', fids)
      .execute()
    for (const { url, access } of requests) {
      expect(Number(decodeClaims(access).exp) * 1000).toBeGreaterThan(Date.now())
      problemOf(await ctx.app.inject({ method: 'GET', url, headers: bearer(access) }), 401, 'token_not_valid')
    }
    // A company write (admitted before its handler, without a read) too.
    const removal = await ctx.app.inject({
      method: 'DELETE',
      url: `/api/company/v1/${roles.acmeSeller}/bank-account/${DEMO.bankAccounts.acme2}`,
      headers: bearer(alice.access),
    })
    problemOf(removal, 401, 'token_not_valid')
  })
})

import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { testDatabase } from '../helpers/database.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { decodeClaims, forgeHs256, respellSignature } from '../helpers/jwt.js'

const ctx = useTestApp()
const refresh = (token: unknown) => ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
const companies = (access: string) => ctx.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })

describe('POST /api/auth/v1/token/refresh', () => {
  it('rotates: a new access and refresh token of the same family', async () => {
    const first = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const response = await refresh(first.refresh)
    expect(response.statusCode).toBe(200)
    const body = response.json()
    expect(Object.keys(body)).toEqual(['access', 'refresh'])
    const [oldClaims, newClaims] = [decodeClaims(first.refresh), decodeClaims(body.refresh)]
    expect(newClaims.fid).toBe(oldClaims.fid)
    expect(newClaims.jti).not.toBe(oldClaims.jti)
    expect(Number(newClaims.exp) - Number(newClaims.iat)).toBe(86_400) // REFRESH_TOKEN_TTL, exactly
    expect(decodeClaims(body.access)).toMatchObject({ token_type: 'access', user_id: DEMO.users.alice, fid: oldClaims.fid })
    expect((await companies(body.access)).statusCode).toBe(200)
    expect((await refresh(body.refresh)).statusCode).toBe(200)
  })

  it('treats a refresh token replayed after its successor was used as theft: 401 and the whole family revoked', async () => {
    const first = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const second = (await refresh(first.refresh)).json()
    const third = (await refresh(second.refresh)).json()
    problemOf(await refresh(first.refresh), 401, 'token_not_valid')
    problemOf(await refresh(third.refresh), 401, 'token_not_valid')
    problemOf(await companies(third.access), 401, 'token_not_valid')
    // Another login is another family and is untouched.
    const other = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    expect((await refresh(other.refresh)).statusCode).toBe(200)
  })

  it('without a grace (REFRESH_REUSE_GRACE=0), lets only one of two concurrent uses of the same refresh token through, and revokes the family', async () => {
    const app = await buildTestApp({ REFRESH_REUSE_GRACE: '0' })
    try {
      const first = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      const refreshOn = (token: string) => app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
      const responses = await Promise.all([refreshOn(first.refresh), refreshOn(first.refresh)])
      expect(responses.map((response) => response.statusCode).sort()).toEqual([200, 401])
      const winner = responses.find((response) => response.statusCode === 200)?.json()
      problemOf(await refreshOn(winner.refresh), 401, 'token_not_valid')
    } finally {
      await app.close()
    }
  })

  it('ends a family at REFRESH_ABSOLUTE_TTL from its login, without taking its last token for a replay', async () => {
    const first = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const { db } = await testDatabase()
    const familyId = String(decodeClaims(first.refresh).fid)
    await db
      .updateTable('token_families')
      .set({ absolute_expires_at: sql<Date>`now() - interval '1 second'` })
      .where('id', '=', familyId)
      .execute()
    problemOf(await refresh(first.refresh), 401, 'token_not_valid')
    const family = await db.selectFrom('token_families').select('revoked_reason').where('id', '=', familyId).executeTakeFirst()
    expect(family).toEqual({ revoked_reason: null })
  })

  it('caps the refresh token lifetime at the family lifetime', async () => {
    const app = await buildTestApp({ REFRESH_ABSOLUTE_TTL: '60', REFRESH_TOKEN_TTL: '1d' })
    try {
      const tokens = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      const claims = decodeClaims(tokens.refresh)
      expect(Number(claims.exp) - Number(claims.iat)).toBeLessThanOrEqual(61)
    } finally {
      await app.close()
    }
  })

  it('refuses an access token, a forged or expired token, and garbage', async () => {
    const tokens = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const claims = decodeClaims(tokens.refresh)
    const now = Math.floor(Date.now() / 1000)
    for (const token of [
      tokens.access,
      forgeHs256(claims, 'another-secret-of-sufficient-length-000000'),
      forgeHs256({ ...claims, exp: now - 10, jti: 'b'.repeat(32) }),
      'not-a-jwt',
    ]) {
      problemOf(await refresh(token), 401, 'token_not_valid')
    }
  })

  it('refuses a second spelling of the current refresh token, without spending it or revoking its family', async () => {
    const tokens = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    problemOf(await refresh(respellSignature(tokens.refresh)), 401, 'token_not_valid')
    expect((await refresh(tokens.refresh)).statusCode).toBe(200)
    expect((await companies(tokens.access)).statusCode).toBe(200)
  })

  it('refuses the refresh of a user disabled since login, and any refresh after a password change', async () => {
    const { db } = await testDatabase()
    const alice = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const bob = await obtainTokens(ctx.app, 'bob@beta.example', DEMO_PASSWORD)
    await db.updateTable('users').set({ is_active: false }).where('id', '=', DEMO.users.alice).execute()
    problemOf(await refresh(alice.refresh), 401, 'token_not_valid')
    await db.updateTable('users').set({ is_active: true }).where('id', '=', DEMO.users.alice).execute()
    problemOf(await refresh(alice.refresh), 401, 'token_not_valid')

    await db.updateTable('users').set({ password_changed_at: new Date() }).where('id', '=', DEMO.users.bob).execute()
    problemOf(await refresh(bob.refresh), 401, 'token_not_valid')
    problemOf(await companies(bob.access), 401, 'token_not_valid')
    const families = await db.selectFrom('token_families').select('revoked_reason').where('user_id', '=', DEMO.users.bob).execute()
    expect(families).toEqual([{ revoked_reason: 'password_changed' }])
  })

  it.each([
    ['no body', undefined],
    ['a missing refresh', {}],
    ['a non-string refresh', { refresh: 12 }],
  ])('answers 400 invalid for %s', async (_case, payload) => {
    const response = await ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: payload as object })
    problemOf(response, 400, 'invalid')
  })
})

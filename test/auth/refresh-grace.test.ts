import { describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { testDatabase } from '../helpers/database.js'
import { bearer, buildTestApp, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { decodeClaims } from '../helpers/jwt.js'

/**
 * A refresh whose answer was lost and is sent again (REFRESH_REUSE_GRACE, Okta's rotation grace):
 * within the grace, while the successor is unused, the spent token gets that same successor again;
 * after it, or once the successor was used, it is a replay and the family is revoked.
 */
const ctx = useTestApp()
const refreshOn = (app: FastifyInstance, token: string) =>
  app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
const refresh = (token: string) => refreshOn(ctx.app, token)
const companies = (access: string) => ctx.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })
const familyOf = async (token: string) => {
  const { db } = await testDatabase()
  return db
    .selectFrom('token_families')
    .select('revoked_reason')
    .where('id', '=', String(decodeClaims(token).fid))
    .executeTakeFirstOrThrow()
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('POST /api/auth/v1/token/refresh: a retry within REFRESH_REUSE_GRACE', () => {
  it('answers a spent token presented again with the same successor, byte for byte, and a fresh access token', async () => {
    const first = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const rotated = (await refresh(first.refresh)).json<{ access: string; refresh: string }>()
    const retry = await refresh(first.refresh)
    expect(retry.statusCode).toBe(200)
    const retried = retry.json<{ access: string; refresh: string }>()
    expect(retried.refresh).toBe(rotated.refresh)
    expect(retried.access).not.toBe(rotated.access)
    expect(decodeClaims(retried.access)).toMatchObject({ token_type: 'access', fid: decodeClaims(first.refresh).fid })
    expect((await companies(retried.access)).statusCode).toBe(200)
    expect((await companies(rotated.access)).statusCode).toBe(200)
    expect(await familyOf(first.refresh)).toEqual({ revoked_reason: null })
    expect((await refresh(retried.refresh)).statusCode).toBe(200) // the family lives on
  })

  it('gives 20 concurrent uses of one token the one successor, and keeps the family', async () => {
    const first = await obtainTokens(ctx.app, 'bob@beta.example', DEMO_PASSWORD)
    const responses = await Promise.all(Array.from({ length: 20 }, () => refresh(first.refresh)))
    expect(responses.map((response) => response.statusCode)).toEqual(Array(20).fill(200))
    const successors = new Set(responses.map((response) => response.json<{ refresh: string }>().refresh))
    expect(successors.size).toBe(1)
    expect(await familyOf(first.refresh)).toEqual({ revoked_reason: null })
    expect((await refresh([...successors][0]!)).statusCode).toBe(200)
  })

  it('is a replay once the successor was used: 401, and the family revoked', async () => {
    const first = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const second = (await refresh(first.refresh)).json<{ access: string; refresh: string }>()
    const third = (await refresh(second.refresh)).json<{ access: string; refresh: string }>()
    problemOf(await refresh(first.refresh), 401, 'token_not_valid')
    expect(await familyOf(first.refresh)).toEqual({ revoked_reason: 'reuse' })
    problemOf(await refresh(third.refresh), 401, 'token_not_valid')
    problemOf(await companies(third.access), 401, 'token_not_valid')
  })

  it('is a replay after the grace: 401, and the family revoked', async () => {
    const app = await buildTestApp({ REFRESH_REUSE_GRACE: '1' })
    try {
      const first = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      const second = (await refreshOn(app, first.refresh)).json<{ refresh: string }>()
      expect((await refreshOn(app, first.refresh)).json<{ refresh: string }>().refresh).toBe(second.refresh)
      await sleep(2100)
      problemOf(await refreshOn(app, first.refresh), 401, 'token_not_valid')
      problemOf(await refreshOn(app, second.refresh), 401, 'token_not_valid')
      expect(await familyOf(first.refresh)).toEqual({ revoked_reason: 'reuse' })
    } finally {
      await app.close()
    }
  })

  it('has no grace with REFRESH_REUSE_GRACE=0', async () => {
    const app = await buildTestApp({ REFRESH_REUSE_GRACE: '0' })
    try {
      const first = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      const second = (await refreshOn(app, first.refresh)).json<{ refresh: string }>()
      problemOf(await refreshOn(app, first.refresh), 401, 'token_not_valid')
      problemOf(await refreshOn(app, second.refresh), 401, 'token_not_valid')
    } finally {
      await app.close()
    }
  })

  it('gives no successor to a family revoked meanwhile', async () => {
    const first = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const { db } = await testDatabase()
    expect((await refresh(first.refresh)).statusCode).toBe(200)
    await db
      .updateTable('token_families')
      .set({ revoked_at: new Date(), revoked_reason: 'logout' })
      .where('id', '=', String(decodeClaims(first.refresh).fid))
      .execute()
    problemOf(await refresh(first.refresh), 401, 'token_not_valid')
  })

  it('works across two instances on one database, 20 concurrent retries split between them', async () => {
    const [one, two] = [await buildTestApp(), await buildTestApp()]
    try {
      const first = await obtainTokens(one, 'carol@gamma.example', DEMO_PASSWORD)
      const rotated = (await refreshOn(one, first.refresh)).json<{ refresh: string }>()
      const retries = await Promise.all(Array.from({ length: 20 }, (_, index) => refreshOn(index % 2 ? one : two, first.refresh)))
      expect(retries.map((response) => response.statusCode)).toEqual(Array(20).fill(200))
      expect(new Set(retries.map((response) => response.json<{ refresh: string }>().refresh))).toEqual(new Set([rotated.refresh]))
      expect((await refreshOn(two, rotated.refresh)).statusCode).toBe(200)
      problemOf(await refreshOn(one, first.refresh), 401, 'token_not_valid') // the successor was used: a replay
      expect(await familyOf(first.refresh)).toEqual({ revoked_reason: 'reuse' })
    } finally {
      await Promise.all([one.close(), two.close()])
    }
  })
})

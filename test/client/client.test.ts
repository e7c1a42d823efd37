import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { ApiClient, ApiError, ConnectionError, isApiError, type FetchLike, type Retry } from '../../packages/client/src/index.js'
import { DEMO, DEMO_PASSWORD, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

/**
 * The client package (packages/client) against the service over HTTP: sessions, typed errors, and
 * retries as docs/retries.md says, with answers lost on purpose by a transport that drops them.
 */

const BOB = { email: 'bob@beta.example', password: DEMO_PASSWORD }
const ALICE = { email: 'alice@acme.example', password: DEMO_PASSWORD }

/** The app listening on a free port of 127.0.0.1 (once per app). */
async function baseUrlOf(context: { app: FastifyInstance }): Promise<string> {
  if (!context.app.server.listening) await context.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(context.app.server.address() as AddressInfo).port}`
}

/** The global fetch, with the answers of the requests `lose` picks thrown away after the service handled them. */
function losing(lose: (method: string, path: string, sent: number) => boolean, sent: string[] = []): FetchLike {
  return async (url, init) => {
    const path = new URL(url).pathname
    sent.push(`${init.method} ${path}`)
    const response = await fetch(url, init)
    if (lose(init.method, path, sent.filter((line) => line === `${init.method} ${path}`).length)) {
      await response.text()
      throw new TypeError('fetch failed: the answer was lost')
    }
    return response
  }
}

describe('the client package against the service', () => {
  const ctx = useTestApp()

  it("runs a buyer's flow: log in, companies, a seller's checklist, a title's documents, a solicitation", async () => {
    const kept: string[] = []
    const client = new ApiClient({ baseUrl: await baseUrlOf(ctx), onTokens: (tokens) => kept.push(tokens.refresh) })
    await client.obtainTokenPair(BOB)
    const companies = await client.getUserCompanies()
    expect(companies.map((company) => company.name)).toEqual(['Fundo Beta FIDC'])
    const buyer = companies[0]?.roles.find((role) => role.role === 'buyer')?.company_role_id ?? ''
    const check = await client.checkSellerDocuments({ company_role_id: buyer, seller_id: DEMO.roles.acmeSeller })
    const missing = check.documents.filter((document) => document.status !== 'approved').map((document) => document.type)
    expect(missing).toEqual(['balance_sheet'])
    const documents = await client.listTitleDocuments({ company_role_id: buyer, title_id: DEMO.titles.t1 })
    expect(documents.map((document) => document.kind)).toEqual(['invoice', 'nfe_xml', 'assignment_contract'])
    const answer = await client.send('requestSellerDocuments', {
      path: { company_role_id: buyer, seller_id: DEMO.roles.acmeSeller },
      body: { document_types: missing },
    })
    expect(answer).toMatchObject({ status: 201, replayed: false, retries: [], idempotencyKey: expect.any(String), requestId: expect.any(String) })
    expect(answer.data.document_types).toEqual(['balance_sheet'])
    expect(kept).toEqual([client.tokens?.refresh])
  })

  it('an error is an ApiError typed with the codes of its operation; an unknown status is handled by its class', async () => {
    const client = new ApiClient({ baseUrl: await baseUrlOf(ctx) })
    await client.obtainTokenPair(BOB)
    const error = await client
      .checkSellerDocuments({ company_role_id: DEMO.roles.betaBuyer, seller_id: DEMO.roles.betaBuyer })
      .catch((e: unknown) => e)
    expect(isApiError(error, 'checkSellerDocuments')).toBe(true)
    expect(error).toMatchObject({ status: 404, code: 'not_found', kind: 'client', requestId: expect.any(String) })
    const login = await client.obtainTokenPair({ email: 'bob@beta.example', password: 'wrong' }).catch((e: unknown) => e)
    expect(login).toMatchObject({ name: 'ApiError', status: 401, code: 'no_active_account' })

    // A status and code from a newer API: still an ApiError, its kind from its class (RFC 9110).
    const teapot: FetchLike = async () =>
      new Response('{"code":"brewing","detail":"Short and stout."}', {
        status: 418,
        headers: { 'content-type': 'application/problem+json' },
      })
    const newer = await new ApiClient({ baseUrl: 'http://127.0.0.1:9', fetch: teapot }).getJsonWebKeySet().catch((e: unknown) => e)
    expect(newer).toBeInstanceOf(ApiError)
    // Its code reaches the caller as `rawCode`; `code` says it is none this client knows.
    expect(newer).toMatchObject({ status: 418, code: 'unknown', rawCode: 'brewing', detail: 'Short and stout.', kind: 'client' })
    expect(String(newer)).toContain('418 brewing')
    expect(error).toMatchObject({ code: 'not_found', rawCode: 'not_found' })
  })

  it('a lost answer to route 5 is sent again with the same key and replayed: one solicitation', async () => {
    const sent: string[] = []
    const client = new ApiClient({
      baseUrl: await baseUrlOf(ctx),
      fetch: losing((method, path, count) => method === 'POST' && path.includes('/document-solicitation/') && count === 1, sent),
      retry: { baseDelayMs: 5 },
    })
    await client.obtainTokenPair(BOB)
    const answer = await client.send('requestSellerDocuments', { path: { company_role_id: DEMO.roles.betaBuyer, seller_id: DEMO.roles.acmeSeller } })
    expect(answer.replayed).toBe(true)
    expect(answer.retries.map((retry) => `${retry.attempt} ${retry.reason}`)).toEqual(['1 no answer: fetch failed: the answer was lost'])
    const { db } = await testDatabase()
    const open = await db
      .selectFrom('document_solicitations')
      .select('id')
      .where('seller_company_role_id', '=', DEMO.roles.acmeSeller)
      .where('status', '=', 'open')
      .execute()
    expect(open).toEqual([{ id: answer.data.id }])
  })

  it('route 11 with a key of the caller: the answer lost, the retry replays it, the row written once', async () => {
    const client = new ApiClient({
      baseUrl: await baseUrlOf(ctx),
      fetch: losing((method, path, count) => path.includes('/customers/') && count === 1),
      retry: { baseDelayMs: 5 },
    })
    await client.obtainTokenPair(ALICE)
    const id = randomUUID()
    const answer = await client.send('saveCustomer', {
      path: { company_role_id: DEMO.roles.acmeSeller, id },
      body: { name: 'Partner Customer Ltda', tax_id: '11444777000161' },
      idempotencyKey: 'partner-sync-42',
    })
    expect(answer).toMatchObject({ status: 201, replayed: true, idempotencyKey: 'partner-sync-42' })
    const { db } = await testDatabase()
    const rows = await db.selectFrom('customers').select(['created_at', 'updated_at']).where('id', '=', id).execute()
    expect(rows).toHaveLength(1)
    expect(rows[0]?.updated_at.toISOString()).toBe(rows[0]?.created_at.toISOString())
  })

  it('route 8 sent again after a lost answer: gone means done', async () => {
    const client = new ApiClient({
      baseUrl: await baseUrlOf(ctx),
      fetch: losing((method, path, count) => method === 'DELETE' && count === 1),
      retry: { baseDelayMs: 5 },
    })
    await client.obtainTokenPair(ALICE)
    await expect(
      client.removeBankAccount({ company_role_id: DEMO.roles.acmeSeller, bank_account_id: DEMO.bankAccounts.acme2 }),
    ).resolves.toBeUndefined()
    // Not after a lost answer: a 404 is the error it is.
    await expect(
      new ApiClient({ baseUrl: await baseUrlOf(ctx), tokens: client.tokens }).removeBankAccount({
        company_role_id: DEMO.roles.acmeSeller,
        bank_account_id: DEMO.bankAccounts.acme2,
      }),
    ).rejects.toMatchObject({ status: 404, code: 'not_found' })
  })

  it('a refresh whose answer is lost is sent again within the grace and gets the same new pair; the session goes on', async () => {
    const retries: Retry[] = []
    const client = new ApiClient({
      baseUrl: await baseUrlOf(ctx),
      fetch: losing((method, path, count) => path.endsWith('/token/refresh') && count === 1),
      onRetry: (retry) => retries.push(retry),
      retry: { baseDelayMs: 5 },
    })
    const first = await client.obtainTokenPair(BOB)
    const second = await client.refreshTokens()
    expect(second.refresh).not.toBe(first.refresh)
    expect(retries.map((retry) => `${retry.operation} ${retry.reason}`)).toEqual(['refreshTokens no answer: fetch failed: the answer was lost'])
    // The login was not revoked as a replay: the new pair refreshes again and reads.
    await client.refreshTokens()
    expect(await client.getUserCompanies()).toHaveLength(1)
  })

  it('a refresh is not sent again past the grace: a replay would end the session', async () => {
    const client = new ApiClient({
      baseUrl: await baseUrlOf(ctx),
      fetch: losing((method, path) => path.endsWith('/token/refresh')),
      retry: { baseDelayMs: 5, refreshGraceMs: 0 },
    })
    await client.obtainTokenPair(BOB)
    await expect(client.refreshTokens()).rejects.toBeInstanceOf(ConnectionError)
  })
})

describe('the client package with short-lived access tokens', () => {
  // 3 s, not 1: exp counts whole seconds, so a 1 s token can be expired a few milliseconds after
  // its refresh, and the calls it was refreshed for fail again on a loaded machine.
  const ctx = useTestApp({ ACCESS_TOKEN_TTL: '3s' })

  it('an expired access token is refreshed once for all the calls that found it expired, and they go on', async () => {
    const sent: string[] = []
    const client = new ApiClient({ baseUrl: await baseUrlOf(ctx), fetch: losing(() => false, sent) })
    await client.obtainTokenPair(BOB)
    await new Promise((resolve) => setTimeout(resolve, 4_100))
    const reads = await Promise.all([client.getUserCompanies(), client.getUserCompanies(), client.getUserCompanies()])
    expect(reads.map((companies) => companies.length)).toEqual([1, 1, 1])
    expect(sent.filter((line) => line.endsWith('/token/refresh'))).toHaveLength(1)
  })
})

describe('the client package without a service', () => {
  it('retries a read on 503 as Retry-After says, and gives up after its attempts with the last answer', async () => {
    let calls = 0
    const busy: FetchLike = async () => {
      calls++
      return new Response('{"code":"service_unavailable","detail":"Busy."}', {
        status: 503,
        headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
      })
    }
    const error = await new ApiClient({ baseUrl: 'http://127.0.0.1:9', fetch: busy, retry: { attempts: 3 } })
      .getJsonWebKeySet()
      .catch((e: unknown) => e)
    expect(calls).toBe(3)
    expect(error).toMatchObject({ status: 503, code: 'service_unavailable', kind: 'server', retryAfter: 0 })
  })

  it('waits on 409 idempotency_key_in_use with the same key, then takes the answer', async () => {
    const keys: string[] = []
    let calls = 0
    const inUse: FetchLike = async (_url, init) => {
      keys.push(init.headers['idempotency-key'] ?? '')
      if (++calls === 1) {
        return new Response('{"code":"idempotency_key_in_use"}', {
          status: 409,
          headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
        })
      }
      return new Response('{"id":"c"}', { status: 201, headers: { 'content-type': 'application/json' } })
    }
    const client = new ApiClient({ baseUrl: 'http://127.0.0.1:9', fetch: inUse, tokens: { access: 'a', refresh: 'r' } })
    const answer = await client.send('saveCustomer', { path: { company_role_id: 'r', id: 'c' }, body: { name: 'N', tax_id: '11444777000161' } })
    expect(answer.retries.map((retry) => retry.reason)).toEqual(['409 idempotency_key_in_use'])
    expect(new Set(keys).size).toBe(1)
  })
})

describe('the client package against a limited service', () => {
  const ctx = useTestApp({ RATE_LIMITS: 'reads=2', RATE_LIMIT_WINDOW: '2s' })

  it('exposes the quota left, and on 429 rate_limited waits Retry-After (with at most a fifth more) before sending again', async () => {
    const client = new ApiClient({ baseUrl: await baseUrlOf(ctx) })
    await client.obtainTokenPair(ALICE)
    const first = await client.send('getUserCompanies', {})
    expect(first.rateLimit).toEqual([{ name: 'reads', quota: 2, windowSeconds: 2, remaining: 1, resetSeconds: 2 }])
    await client.send('getUserCompanies', {})
    const third = await client.send('getUserCompanies', {})
    expect(third.retries.map((retry) => retry.reason)).toEqual(['429'])
    expect(third.retries[0]!.delayMs).toBeGreaterThanOrEqual(1000)
    expect(third.retries[0]!.delayMs).toBeLessThanOrEqual(2400)
    expect(third.status).toBe(200)
  })

  it('returns a 429 whose Retry-After is beyond maxDelayMs at once, with the spent quota', async () => {
    const client = new ApiClient({ baseUrl: await baseUrlOf(ctx), retry: { maxDelayMs: 500 } })
    await client.obtainTokenPair(BOB)
    await Promise.all([client.getUserCompanies(), client.getUserCompanies()])
    const error = await client.getUserCompanies().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({ status: 429, code: 'rate_limited' })
    expect((error as ApiError).rateLimit[0]).toMatchObject({ name: 'reads', remaining: 0, quota: 2 })
  })
})

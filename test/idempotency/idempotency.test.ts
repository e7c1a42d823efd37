import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { DEMO, perTestTokens, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import { linkFor, tokenFamilies } from '../registration/links.js'
import { customerUrl, expectRanOnce, isReplay, keptKeys, newKey, openSolicitations, post, solicitationUrl } from './helpers.js'

const context = useTestApp()
const tokenOf = perTestTokens(context)
const { roles } = DEMO
const db = async () => (await testDatabase()).db

const solicit = async (key: string | undefined, payload: object = {}, options: { email?: string; url?: string } = {}) =>
  post(context.app, options.url ?? solicitationUrl(), await tokenOf(options.email ?? 'bob@beta.example'), payload, key)

describe('Idempotency-Key on route 5 (document solicitation)', () => {
  it('keeps the first 201 and replays it to a retry with the same key, without a second solicitation', async () => {
    const key = newKey()
    const first = await solicit(key, { message: 'Balance sheet, please' })
    expect(first.statusCode).toBe(201)
    expect(isReplay(first)).toBe(false)
    expect(await keptKeys()).toEqual([{ status: 201 }])

    const retry = await solicit(key, { message: 'Balance sheet, please' })
    expect(retry.statusCode).toBe(201)
    expect(retry.headers['idempotent-replayed']).toBe('true')
    expect(retry.headers['content-type']).toBe(first.headers['content-type'])
    expect(retry.body).toBe(first.body)
    expect(await openSolicitations()).toBe(1)
  })

  it('without the header behaves as before: a second request is 409 solicitation_already_open, and nothing is kept', async () => {
    expect((await solicit(undefined)).statusCode).toBe(201)
    const again = await solicit(undefined)
    problemOf(again, 409, 'solicitation_already_open')
    expect(again.headers['idempotent-replayed']).toBeUndefined()
    expect(await keptKeys()).toEqual([])
  })

  it('runs 20 concurrent requests with one key exactly once: the others replay it or are 409 idempotency_key_in_use', async () => {
    const key = newKey()
    await tokenOf('bob@beta.example')
    const responses = await Promise.all(Array.from({ length: 20 }, () => solicit(key)))
    expectRanOnce(responses)
    for (const response of responses.filter((answer) => answer.statusCode === 409)) expect(response.headers['retry-after']).toBe('1')
    expect(await openSolicitations()).toBe(1)
    // Once the first is answered, every retry replays it.
    const late = await solicit(key)
    expect([late.statusCode, isReplay(late)]).toEqual([201, true])
  })

  it('answers 422 idempotency_key_reused to the same key with another body or another path', async () => {
    const key = newKey()
    expect((await solicit(key, { document_types: ['balance_sheet'] })).statusCode).toBe(201)
    problemOf(await solicit(key, { document_types: ['cnpj_card'] }), 422, 'idempotency_key_reused')
    problemOf(await solicit(key, { document_types: ['balance_sheet'] }, { url: solicitationUrl(roles.gammaSeller) }), 422, 'idempotency_key_reused')
    expect(await openSolicitations(roles.gammaSeller)).toBe(0)
    // The same body with its properties in another order is the same request.
    const reordered = await solicit(key, { message: null, document_types: ['balance_sheet'] })
    problemOf(reordered, 422, 'idempotency_key_reused')
    const other = newKey()
    expect((await solicit(other, { message: 'Hi', due_date: null }, { url: solicitationUrl(roles.gammaSeller) })).statusCode).toBe(201)
    const same = await solicit(other, { due_date: null, message: 'Hi' }, { url: solicitationUrl(roles.gammaSeller) })
    expect([same.statusCode, isReplay(same)]).toEqual([201, true])
  })

  it('fingerprints the body canonically: three properties in any order replay; the same types in another order, or fewer, are another request', async () => {
    const key = newKey()
    const body = { message: 'Two documents', due_date: null, document_types: ['balance_sheet', 'cnpj_card'] }
    expect((await solicit(key, body)).statusCode).toBe(201)
    for (const reordered of [
      { document_types: ['balance_sheet', 'cnpj_card'], due_date: null, message: 'Two documents' },
      { due_date: null, document_types: ['balance_sheet', 'cnpj_card'], message: 'Two documents' },
    ]) {
      const retry = await solicit(key, reordered)
      expect([retry.statusCode, isReplay(retry)]).toEqual([201, true])
    }
    problemOf(await solicit(key, { ...body, document_types: ['cnpj_card', 'balance_sheet'] }), 422, 'idempotency_key_reused')
    problemOf(await solicit(key, { ...body, document_types: ['balance_sheet'] }), 422, 'idempotency_key_reused')
    problemOf(await solicit(key, { ...body, message: 'Two documents ' }), 422, 'idempotency_key_reused')
  })

  it('refuses a malformed key with 400 invalid, naming the header, and runs nothing', async () => {
    for (const key of ['with space', 'x'.repeat(256), 'ключ', '']) {
      const body = problemOf(await solicit(key), 400, 'invalid')
      expect(Object.keys(body.errors as object)).toEqual(['idempotency-key'])
    }
    expect(await openSolicitations()).toBe(0)
    expect((await solicit(`${'k'.repeat(254)}~`)).statusCode).toBe(201)
  })

  it('keeps keys per user: the same key of another user is another key', async () => {
    const key = newKey()
    const bob = await solicit(key)
    const dave = await solicit(key, {}, { email: 'dave@delta.example', url: solicitationUrl(roles.acmeSeller, roles.deltaBuyer) })
    expect([bob.statusCode, isReplay(bob), dave.statusCode, isReplay(dave)]).toEqual([201, false, 201, false])
    expect(await openSolicitations()).toBe(2)
  })

  it('reserves no key for a request that fails its token, membership or input', async () => {
    const key = newKey()
    problemOf(await post(context.app, solicitationUrl(), 'not-a-token', {}, key), 401, 'token_not_valid')
    problemOf(await solicit(key, {}, { url: solicitationUrl(roles.acmeSeller, roles.deltaBuyer) }), 404, 'not_found')
    problemOf(await solicit(key, { due_date: 'tomorrow' }), 400, 'invalid')
    expect(await keptKeys()).toEqual([])
    const first = await solicit(key)
    expect([first.statusCode, isReplay(first)]).toEqual([201, false])
  })

  it('keeps a 4xx the route answered and replays it, even once the conflict is gone', async () => {
    expect((await solicit(undefined)).statusCode).toBe(201)
    const key = newKey()
    const conflict = problemOf(await solicit(key), 409, 'solicitation_already_open')
    await sql`UPDATE document_solicitations SET status = 'cancelled'`.execute(await db())
    const retry = await solicit(key)
    expect(isReplay(retry)).toBe(true)
    expect(problemOf(retry, 409, 'solicitation_already_open')).toEqual(conflict)
    expect(await openSolicitations()).toBe(0)
  })

  it('forgets a key after 24 h: the same key then runs a new request', async () => {
    const key = newKey()
    expect((await solicit(key, { document_types: ['balance_sheet'] })).statusCode).toBe(201)
    await sql`UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute'`.execute(await db())
    const later = await solicit(key, { document_types: ['cnpj_card'] }, { url: solicitationUrl(roles.gammaSeller) })
    expect([later.statusCode, isReplay(later)]).toEqual([201, false])
  })

  it('never stores the key, nor the answer in clear', async () => {
    const key = `secret-key-${randomUUID()}`
    const first = await solicit(key)
    const { rows } = await sql<{ row: string }>`SELECT row_to_json(k)::text AS row FROM idempotency_keys k`.execute(await db())
    expect(rows).toHaveLength(1)
    const stored = rows[0]!.row
    expect(stored).not.toContain(key)
    expect(stored).not.toContain(Buffer.from(key).toString('hex'))
    expect(stored).not.toContain(Buffer.from(first.json<{ id: string }>().id).toString('hex'))
  })
})

describe('Idempotency-Key on route 11 (customer upsert)', () => {
  const save = async (id: string, payload: object, key?: string) =>
    post(context.app, customerUrl(id), await tokenOf('alice@acme.example'), payload, key)

  it('replays the first answer to a late retry instead of undoing a later change', async () => {
    const id = randomUUID()
    const key = newKey()
    const first = await save(id, { name: 'First Name', tax_id: '11444777000161' }, key)
    expect(first.statusCode).toBe(201)
    expect((await save(id, { name: 'Renamed', tax_id: '11444777000161' })).statusCode).toBe(201)
    const retry = await save(id, { name: 'First Name', tax_id: '11444777000161' }, key)
    expect([retry.statusCode, isReplay(retry), retry.body]).toEqual([201, true, first.body])
    const stored = await (await db()).selectFrom('customers').select('name').where('id', '=', id).executeTakeFirstOrThrow()
    expect(stored.name).toBe('Renamed')
  })

  it('replays the kept answer to 20 concurrent retries, none of them 409 (a kept answer is final, whoever holds the key)', async () => {
    const id = randomUUID()
    const key = newKey()
    const first = await save(id, { name: 'Many Retries', tax_id: '11444777000161' }, key)
    expect(first.statusCode).toBe(201)
    const retries = await Promise.all(Array.from({ length: 20 }, () => save(id, { name: 'Many Retries', tax_id: '11444777000161' }, key)))
    expect(retries.map((retry) => `${retry.statusCode} ${isReplay(retry)}`)).toEqual(Array.from({ length: 20 }, () => '201 true'))
  })

  it('answers 422 to the same key for another customer id', async () => {
    const key = newKey()
    expect((await save(randomUUID(), { name: 'One', tax_id: '11444777000161' }, key)).statusCode).toBe(201)
    problemOf(await save(randomUUID(), { name: 'One', tax_id: '11444777000161' }, key), 422, 'idempotency_key_reused')
  })
})

describe('Idempotency-Key on route 10 (confirm a migrated account)', () => {
  const confirm = (url: string, key: string | undefined, payload: object = {}) => post(context.app, url, undefined, payload, key)

  it('replays the 201 (the same session) to a retry after the link is spent, where it would be invalid_link', async () => {
    const url = await linkFor('maria@legacy.example')
    const key = newKey()
    const first = await confirm(url, key, { password: 'a new long passphrase' })
    expect(first.statusCode).toBe(201)
    const retry = await confirm(url, key, { password: 'a new long passphrase' })
    expect([retry.statusCode, isReplay(retry), retry.body]).toEqual([201, true, first.body])
    expect(retry.headers['cache-control']).toBe('no-store')
    expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
    problemOf(await confirm(url, undefined, { password: 'a new long passphrase' }), 400, 'invalid_link')
    problemOf(await confirm(url, key, { password: 'another passphrase' }), 422, 'idempotency_key_reused')
    expect(await keptKeys()).toHaveLength(1)
  })

  it('runs 20 concurrent confirmations with one key once: one session', async () => {
    const url = await linkFor('maria@legacy.example')
    const key = newKey()
    const responses = await Promise.all(Array.from({ length: 20 }, () => confirm(url, key)))
    expectRanOnce(responses)
    expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
  })

  it('keeps nothing for a link that fails: an invalid_link reserves no key', async () => {
    const url = await linkFor('maria@legacy.example')
    const key = newKey()
    problemOf(await confirm(`${url.slice(0, -3)}abc`, key), 400, 'invalid_link')
    expect(await keptKeys()).toEqual([])
    expect((await confirm(url, key)).statusCode).toBe(201)
  })
})

describe("a replayed problem's log line", () => {
  const lines: string[] = []
  const logged = useTestApp({ LOG_LEVEL: 'info' }, { logDestination: { write: (line: string) => void lines.push(line) } })
  const tokens = perTestTokens(logged)

  it('names its problem code, as the first answer did', async () => {
    const bob = await tokens('bob@beta.example')
    expect((await post(logged.app, solicitationUrl(), bob, {}, undefined)).statusCode).toBe(201)
    const key = newKey()
    problemOf(await post(logged.app, solicitationUrl(), bob, {}, key), 409, 'solicitation_already_open')
    lines.length = 0
    const replay = await post(logged.app, solicitationUrl(), bob, {}, key)
    expect([replay.statusCode, isReplay(replay)]).toEqual([409, true])
    const completed = lines.map((line) => JSON.parse(line) as { msg?: string; code?: string }).filter((entry) => entry.msg === 'request completed')
    expect(completed.map((entry) => entry.code)).toEqual(['solicitation_already_open'])
  })
})

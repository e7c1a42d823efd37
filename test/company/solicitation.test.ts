import { beforeEach, describe, expect, it } from 'vitest'
import { insertOpenSolicitation } from '../../src/company/kyc/repository.js'
import { utcToday } from '../../src/company/kyc/status.js'
import { KYC_TYPES } from '../../src/vocabulary.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

const context = useTestApp()
const { roles } = DEMO
const UNKNOWN = 'ffffffff-0000-4000-8000-000000000000'
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
// The demo's Gamma holds its articles of association and CNPJ card alone.
const GAMMA_MISSING = KYC_TYPES.filter((type) => type !== 'articles_of_association' && type !== 'cnpj_card')

const url = (sellerId: string, roleId: string = roles.betaBuyer, version = 'v1') =>
  `/api/company/${version}/${roleId}/document-solicitation/${sellerId}`
const db = async () => (await testDatabase()).db
const dayOffset = (days: number) => utcToday(new Date(Date.now() + days * 86_400_000))

let bob: string
beforeEach(async () => {
  bob = (await obtainTokens(context.app, 'bob@beta.example', DEMO_PASSWORD)).access
})

function solicit(sellerId: string, payload: unknown = {}, options: { token?: string; roleId?: string; version?: string } = {}) {
  return context.app.inject({
    method: 'POST',
    url: url(sellerId, options.roleId, options.version),
    headers: bearer(options.token ?? bob),
    payload: payload as Record<string, unknown>,
  })
}

const openRows = async () => (await db()).selectFrom('document_solicitations').selectAll().where('status', '=', 'open').execute()

describe('POST /api/company/{version}/{company_role_id}/document-solicitation/{seller_id}', () => {
  it('asks Acme for what is not approved (the expired balance sheet), then 409 on a second try', async () => {
    const response = await solicit(roles.acmeSeller)
    expect(response.statusCode).toBe(201)
    const body = response.json<Record<string, unknown>>()
    expect(body).toEqual({
      id: expect.any(String),
      buyer_company_role_id: roles.betaBuyer,
      seller_id: roles.acmeSeller,
      document_types: ['balance_sheet'],
      message: null,
      due_date: null,
      status: 'open',
      created_at: expect.stringMatching(ISO),
    })
    const [stored] = await openRows()
    expect(stored).toMatchObject({
      id: body.id,
      buyer_company_role_id: roles.betaBuyer,
      seller_company_role_id: roles.acmeSeller,
      document_types: ['balance_sheet'],
      created_by: DEMO.users.bob,
    })

    const again = problemOf(await solicit(roles.acmeSeller, { document_types: ['cnpj_card'] }), 409, 'solicitation_already_open')
    expect(again.solicitation_id).toBe(body.id)
    expect(await openRows()).toHaveLength(1)
  })

  it('defaults to every missing type of Gamma, and stores message and due date', async () => {
    const response = await solicit(roles.gammaSeller, { message: '  Please upload these.  ', due_date: dayOffset(0) })
    expect(response.statusCode).toBe(201)
    expect(response.json()).toMatchObject({
      document_types: GAMMA_MISSING,
      message: 'Please upload these.',
      due_date: dayOffset(0),
      seller_id: roles.gammaSeller,
    })
  })

  it('takes explicit types in checklist order, approved ones included', async () => {
    const response = await solicit(roles.acmeSeller, { document_types: ['proof_of_address', 'cnpj_card'], message: '   ' })
    expect(response.statusCode).toBe(201)
    expect(response.json()).toMatchObject({ document_types: ['cnpj_card', 'proof_of_address'], message: null })
  })

  it('accepts a request without a body, and null for the optional fields', async () => {
    const bare = await context.app.inject({ method: 'POST', url: url(roles.acmeSeller), headers: bearer(bob) })
    expect(bare.statusCode).toBe(201)
    expect(bare.json()).toMatchObject({ document_types: ['balance_sheet'] })
    const nulls = await solicit(roles.gammaSeller, { message: null, due_date: null })
    expect(nulls.statusCode).toBe(201)
    expect(nulls.json()).toMatchObject({ message: null, due_date: null, document_types: GAMMA_MISSING })
  })

  it('is 409 nothing_to_request when every type is approved and none is named', async () => {
    problemOf(await solicit(roles.deltaSeller), 409, 'nothing_to_request')
    expect(await openRows()).toHaveLength(0)
    const explicit = await solicit(roles.deltaSeller, { document_types: ['balance_sheet'] })
    expect(explicit.statusCode).toBe(201)
  })

  it('opens a new solicitation once the previous one is closed', async () => {
    const first = (await solicit(roles.acmeSeller)).json<{ id: string }>()
    await (await db()).updateTable('document_solicitations').set({ status: 'fulfilled', closed_at: new Date() }).where('id', '=', first.id).execute()
    const second = await solicit(roles.acmeSeller)
    expect(second.statusCode).toBe(201)
    expect(second.json<{ id: string }>().id).not.toBe(first.id)
  })

  it("keeps one buyer's open solicitation apart from another buyer's", async () => {
    const dave = (await obtainTokens(context.app, 'dave@delta.example', DEMO_PASSWORD)).access
    expect((await solicit(roles.acmeSeller, {}, { token: dave, roleId: roles.deltaBuyer })).statusCode).toBe(201)
    expect((await solicit(roles.acmeSeller)).statusCode).toBe(201)
    expect(await openRows()).toHaveLength(2)
  })

  it('lets exactly one of concurrent requests through; the others get its id', async () => {
    const responses = await Promise.all(Array.from({ length: 6 }, () => solicit(roles.gammaSeller)))
    const created = responses.filter((response) => response.statusCode === 201)
    expect(created).toHaveLength(1)
    const id = created[0]?.json<{ id: string }>().id
    for (const response of responses.filter((candidate) => candidate.statusCode !== 201)) {
      expect(problemOf(response, 409, 'solicitation_already_open').solicitation_id).toBe(id)
    }
    expect((await openRows()).map((row) => row.id)).toEqual([id])
  })

  it('turns the unique index violation of a lost race into the open id', async () => {
    // What the loser of a race runs: its insert after the winner's commit, the pre-check having seen nothing.
    const values = {
      buyerRoleId: roles.betaBuyer,
      sellerRoleId: roles.acmeSeller,
      documentTypes: ['balance_sheet' as const],
      message: null,
      dueDate: null,
      createdBy: DEMO.users.bob,
    }
    const database = await db()
    const winner = await insertOpenSolicitation(database, values)
    if (!('created' in winner)) throw new Error('the first insert must create')
    expect(await insertOpenSolicitation(database, values)).toEqual({ alreadyOpen: winner.created.id })
    const response = problemOf(await solicit(roles.acmeSeller), 409, 'solicitation_already_open')
    expect(response.solicitation_id).toBe(winner.created.id)
  })

  it('is 404 unsupported_version for any version but v1', async () => {
    for (const version of ['v2', 'V1', 'v0']) {
      problemOf(await solicit(roles.acmeSeller, {}, { version }), 404, 'unsupported_version')
    }
    expect(await openRows()).toHaveLength(0)
  })

  it('is 400 for a bad body', async () => {
    const cases: [unknown, string][] = [
      [{ document_types: [] }, 'document_types'],
      [{ document_types: ['cnpj_card', 'cnpj_card'] }, 'document_types'],
      [{ document_types: ['passport'] }, 'document_types.0'],
      [{ document_types: 'cnpj_card' }, 'document_types'],
      [{ message: 'x'.repeat(2001) }, 'message'],
      [{ message: 42 }, 'message'],
      [{ due_date: 'tomorrow' }, 'due_date'],
      [{ due_date: '2026-02-30' }, 'due_date'],
      [{ due_date: dayOffset(-1) }, 'due_date'],
    ]
    for (const [payload, field] of cases) {
      const body = problemOf(await solicit(roles.acmeSeller, payload), 400, 'invalid')
      expect(Object.keys(body.errors as object), JSON.stringify(payload)).toContain(field)
    }
    expect(await openRows()).toHaveLength(0)
    expect((await solicit(roles.acmeSeller, { message: 'x'.repeat(2000), unknown: true })).statusCode).toBe(201)
  })

  it('is 400 for unreadable JSON and 415 for another media type', async () => {
    const headers = { ...bearer(bob), 'content-type': 'application/json' }
    problemOf(await context.app.inject({ method: 'POST', url: url(roles.acmeSeller), headers, payload: '{' }), 400, 'parse_error')
    const text = await context.app.inject({
      method: 'POST',
      url: url(roles.acmeSeller),
      headers: { ...bearer(bob), 'content-type': 'text/plain' },
      payload: 'hello',
    })
    problemOf(text, 415, 'unsupported_media_type')
  })

  it('is 400 for a malformed UUID', async () => {
    expect(problemOf(await solicit('not-a-uuid'), 400, 'invalid').errors).toHaveProperty('seller_id')
    expect(problemOf(await solicit(roles.acmeSeller, {}, { roleId: 'nope' }), 400, 'invalid').errors).toHaveProperty('company_role_id')
  })

  it('is 404 when seller_id is not an active seller role', async () => {
    for (const sellerId of [roles.betaBuyer, roles.deltaBuyer, UNKNOWN]) problemOf(await solicit(sellerId), 404, 'not_found')
    await (await db()).updateTable('company_roles').set({ is_active: false }).where('id', '=', roles.gammaSeller).execute()
    problemOf(await solicit(roles.gammaSeller), 404, 'not_found')
    expect(await openRows()).toHaveLength(0)
  })

  it("is 404 for another tenant's company role", async () => {
    problemOf(await solicit(roles.acmeSeller, {}, { roleId: roles.deltaBuyer }), 404, 'not_found')
    problemOf(await solicit(roles.acmeSeller, {}, { roleId: UNKNOWN }), 404, 'not_found')
  })

  it('is 403 for a seller role or without the documents permission', async () => {
    const alice = (await obtainTokens(context.app, 'alice@acme.example', DEMO_PASSWORD)).access
    problemOf(await solicit(roles.gammaSeller, {}, { token: alice, roleId: roles.acmeSeller }), 403, 'wrong_role')
    const lucas = (await obtainTokens(context.app, 'lucas@legacy.example', 'legacy-password')).access
    problemOf(await solicit(roles.acmeSeller, {}, { token: lucas }), 403, 'permission_denied')
    expect(await openRows()).toHaveLength(0)
  })

  it('is 401 without a token or with a bad one', async () => {
    problemOf(await context.app.inject({ method: 'POST', url: url(roles.acmeSeller), payload: {} }), 401, 'not_authenticated')
    problemOf(await solicit(roles.acmeSeller, {}, { token: 'not-a-token' }), 401, 'token_not_valid')
  })
})

import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { KYC_TYPES } from '../../src/vocabulary.js'
import { kycChecklist, utcToday } from '../../src/company/kyc/status.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

const context = useTestApp()
const { roles, companies } = DEMO
const UNKNOWN = 'ffffffff-0000-4000-8000-000000000000'
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const url = (roleId: string, sellerId: string) => `/api/company/v1/${roleId}/buyer/check-documents/${sellerId}`
const db = async () => (await testDatabase()).db
const dayOffset = (days: number) => utcToday(new Date(Date.now() + days * 86_400_000))

let bob: string
beforeEach(async () => {
  bob = (await obtainTokens(context.app, 'bob@beta.example', DEMO_PASSWORD)).access
})

async function check(sellerId: string, token = bob, roleId: string = roles.betaBuyer) {
  return context.app.inject({ method: 'GET', url: url(roleId, sellerId), headers: bearer(token) })
}

interface Row {
  type: string
  status: string
  document_id: string | null
  valid_until: string | null
  updated_at: string | null
}
const statuses = (rows: Row[]) => Object.fromEntries(rows.map((row) => [row.type, row.status]))

describe('GET /api/company/v1/{company_role_id}/buyer/check-documents/{seller_id}', () => {
  it("shows Acme's documents to Beta: all approved but the expired balance sheet", async () => {
    const response = await check(roles.acmeSeller)
    expect(response.statusCode).toBe(200)
    const body = response.json<{ seller_id: string; company: unknown; complete: boolean; documents: Row[]; open_solicitation: unknown }>()
    expect(body.seller_id).toBe(roles.acmeSeller)
    expect(body.company).toEqual({ name: 'Acme Indústria Ltda', tax_id: '11222333000181' })
    expect(body.complete).toBe(false)
    expect(body.open_solicitation).toBeNull()
    expect(body.documents.map((row) => row.type)).toEqual(KYC_TYPES)
    expect(statuses(body.documents)).toEqual({
      ...Object.fromEntries(KYC_TYPES.map((type) => [type, 'approved'])),
      balance_sheet: 'expired',
    })
    const stored = await (
      await db()
    )
      .selectFrom('kyc_documents')
      .select(['id', 'type', 'valid_until'])
      .where('company_id', '=', companies.acme)
      .execute()
    for (const row of body.documents) {
      const document = stored.find((candidate) => candidate.type === row.type)
      expect(row.document_id).toBe(document?.id)
      expect(row.valid_until).toBe(document?.valid_until)
      expect(row.updated_at).toMatch(ISO)
    }
    const balanceSheet = body.documents.find((row) => row.type === 'balance_sheet')
    expect(balanceSheet?.valid_until).toBe(dayOffset(-35))
    expect(body.documents.find((row) => row.type === 'articles_of_association')?.valid_until).toBeNull()
  })

  it("shows Gamma's missing types with null fields", async () => {
    const body = (await check(roles.gammaSeller)).json<{ complete: boolean; documents: Row[] }>()
    expect(body.complete).toBe(false)
    expect(statuses(body.documents)).toEqual({
      ...Object.fromEntries(KYC_TYPES.map((type) => [type, 'missing'])),
      articles_of_association: 'approved',
      cnpj_card: 'approved',
    })
    expect(body.documents.find((row) => row.type === 'balance_sheet')).toEqual({
      type: 'balance_sheet',
      status: 'missing',
      document_id: null,
      valid_until: null,
      updated_at: null,
    })
  })

  it('is complete for Delta, whose documents are all approved and valid', async () => {
    const body = (await check(roles.deltaSeller)).json<{ complete: boolean; company: unknown; documents: Row[] }>()
    expect(body.complete).toBe(true)
    expect(body.company).toEqual({ name: 'Delta Participações S.A.', tax_id: '12ABC34501DE35' })
    expect(body.documents.every((row) => row.status === 'approved')).toBe(true)
  })

  it('reads the latest document of each type: pending_review and rejected replace an older approval', async () => {
    const database = await db()
    const newer = (type: 'balance_sheet' | 'cnpj_card', status: 'pending_review' | 'rejected') => ({
      company_id: companies.acme,
      type,
      status,
      filename: `${type}-new.pdf`,
      issued_at: dayOffset(-1),
      valid_until: dayOffset(300),
      updated_at: sql<Date>`now() + interval '1 second'`,
    })
    const inserted = await database
      .insertInto('kyc_documents')
      .values([newer('balance_sheet', 'pending_review'), newer('cnpj_card', 'rejected')])
      .returning(['id', 'type'])
      .execute()
    // An older row must not win even though it was inserted last.
    await database
      .insertInto('kyc_documents')
      .values({
        company_id: companies.acme,
        type: 'cnpj_card',
        status: 'approved',
        filename: 'old.pdf',
        issued_at: dayOffset(-30),
        valid_until: dayOffset(60),
        updated_at: sql<Date>`now() - interval '30 days'`,
      })
      .execute()
    const body = (await check(roles.acmeSeller)).json<{ complete: boolean; documents: Row[] }>()
    const byType = Object.fromEntries(body.documents.map((row) => [row.type, row]))
    expect(byType.balance_sheet?.status).toBe('pending_review')
    expect(byType.balance_sheet?.document_id).toBe(inserted.find((row) => row.type === 'balance_sheet')?.id)
    expect(byType.cnpj_card?.status).toBe('rejected')
    expect(byType.cnpj_card?.document_id).toBe(inserted.find((row) => row.type === 'cnpj_card')?.id)
    expect(body.complete).toBe(false)
  })

  it('keeps a document approved through its valid_until day, expired the day after', async () => {
    const database = await db()
    const setValidUntil = (type: 'cnpj_card' | 'proof_of_address', validUntil: string) =>
      database
        .updateTable('kyc_documents')
        .set({ valid_until: validUntil })
        .where('company_id', '=', companies.delta)
        .where('type', '=', type)
        .execute()
    await setValidUntil('cnpj_card', dayOffset(0))
    await setValidUntil('proof_of_address', dayOffset(-1))
    const body = (await check(roles.deltaSeller)).json<{ complete: boolean; documents: Row[] }>()
    expect(statuses(body.documents).cnpj_card).toBe('approved')
    expect(statuses(body.documents).proof_of_address).toBe('expired')
    expect(body.complete).toBe(false)
  })

  // Route 7 builds its checklist in SQL, route 5 asks for what kycChecklist (status.ts) finds not approved: one rule, two forms.
  it('answers what kycChecklist, the rule route 5 uses, finds from the latest documents', async () => {
    const database = await db()
    const retype = (
      type: 'cnpj_card' | 'proof_of_address' | 'balance_sheet',
      set: { status?: 'approved' | 'rejected'; valid_until?: string | null },
    ) => database.updateTable('kyc_documents').set(set).where('company_id', '=', companies.delta).where('type', '=', type).execute()
    await retype('cnpj_card', { valid_until: dayOffset(0) })
    await retype('proof_of_address', { valid_until: dayOffset(-1) })
    await retype('balance_sheet', { status: 'rejected', valid_until: dayOffset(-1) })
    await database.deleteFrom('kyc_documents').where('company_id', '=', companies.delta).where('type', '=', 'income_statement').execute()
    for (const [sellerId, companyId] of [
      [roles.acmeSeller, companies.acme],
      [roles.gammaSeller, companies.gamma],
      [roles.deltaSeller, companies.delta],
    ] as const) {
      const stored = await database
        .selectFrom('kyc_documents')
        .select(['id', 'type', 'status', 'valid_until', 'updated_at'])
        .where('company_id', '=', companyId)
        .orderBy('updated_at', 'desc')
        .execute()
      const latest = KYC_TYPES.flatMap((type) => stored.filter((row) => row.type === type).slice(0, 1))
      const expected = kycChecklist(
        latest.map((row) => ({ ...row, updated_at: new Date(row.updated_at).toISOString() })),
        utcToday(new Date()),
      )
      const body = (await check(sellerId)).json<{ complete: boolean; documents: Row[] }>()
      expect(body.documents).toEqual(expected.documents)
      expect(body.complete).toBe(expected.complete)
    }
  })

  it("shows the caller's open solicitation, and only that one", async () => {
    const database = await db()
    const solicitation = (buyer: string, status: 'open' | 'fulfilled') => ({
      buyer_company_role_id: buyer,
      seller_company_role_id: roles.acmeSeller,
      document_types: ['balance_sheet' as const],
      status,
      created_by: DEMO.users.dave,
      due_date: dayOffset(10),
    })
    await database
      .insertInto('document_solicitations')
      .values([solicitation(roles.deltaBuyer, 'open'), solicitation(roles.betaBuyer, 'fulfilled')])
      .execute()
    expect((await check(roles.acmeSeller)).json<{ open_solicitation: unknown }>().open_solicitation).toBeNull()

    const created = await context.app.inject({
      method: 'POST',
      url: `/api/company/v1/${roles.betaBuyer}/document-solicitation/${roles.acmeSeller}`,
      headers: bearer(bob),
      payload: { due_date: dayOffset(7), message: 'Please send the new balance sheet.' },
    })
    expect(created.statusCode).toBe(201)
    const solicitationBody = created.json<{ id: string; created_at: string }>()
    const body = (await check(roles.acmeSeller)).json<{ open_solicitation: unknown }>()
    expect(body.open_solicitation).toEqual({
      id: solicitationBody.id,
      document_types: ['balance_sheet'],
      due_date: dayOffset(7),
      created_at: solicitationBody.created_at,
    })
  })

  it('answers with a trailing slash too', async () => {
    const response = await context.app.inject({ method: 'GET', url: `${url(roles.betaBuyer, roles.acmeSeller)}/`, headers: bearer(bob) })
    expect(response.statusCode).toBe(200)
  })

  it('is 404 when seller_id is not an active seller role', async () => {
    const database = await db()
    for (const sellerId of [roles.betaBuyer, roles.deltaBuyer, UNKNOWN]) problemOf(await check(sellerId), 404, 'not_found')

    await database.updateTable('company_roles').set({ is_active: false }).where('id', '=', roles.gammaSeller).execute()
    problemOf(await check(roles.gammaSeller), 404, 'not_found')
    await database.updateTable('companies').set({ is_active: false }).where('id', '=', companies.delta).execute()
    problemOf(await check(roles.deltaSeller), 404, 'not_found')
    expect((await check(roles.acmeSeller)).statusCode).toBe(200)
  })

  it("is 404 for another tenant's company role", async () => {
    problemOf(await check(roles.acmeSeller, bob, roles.deltaBuyer), 404, 'not_found')
    problemOf(await check(roles.acmeSeller, bob, UNKNOWN), 404, 'not_found')
  })

  it('is 403 wrong_role for a seller role', async () => {
    const alice = (await obtainTokens(context.app, 'alice@acme.example', DEMO_PASSWORD)).access
    problemOf(await check(roles.gammaSeller, alice, roles.acmeSeller), 403, 'wrong_role')
    const dave = (await obtainTokens(context.app, 'dave@delta.example', DEMO_PASSWORD)).access
    problemOf(await check(roles.acmeSeller, dave, roles.deltaSeller), 403, 'wrong_role')
    expect((await check(roles.acmeSeller, dave, roles.deltaBuyer)).statusCode).toBe(200)
  })

  it('is 403 permission_denied without the documents permission', async () => {
    const lucas = (await obtainTokens(context.app, 'lucas@legacy.example', 'legacy-password')).access
    problemOf(await check(roles.acmeSeller, lucas), 403, 'permission_denied')
    await (
      await db()
    )
      .updateTable('memberships')
      .set({ permissions: ['documents'] })
      .where('user_id', '=', DEMO.users.lucas)
      .execute()
    expect((await check(roles.acmeSeller, lucas)).statusCode).toBe(200)
  })

  it('is 401 without a token or with a bad one', async () => {
    problemOf(await context.app.inject({ method: 'GET', url: url(roles.betaBuyer, roles.acmeSeller) }), 401, 'not_authenticated')
    problemOf(await check(roles.acmeSeller, 'not-a-token'), 401, 'token_not_valid')
  })

  it('is 400 for a malformed UUID', async () => {
    const seller = problemOf(await check('not-a-uuid'), 400, 'invalid')
    expect(seller.errors).toHaveProperty('seller_id')
    const role = problemOf(await check(roles.acmeSeller, bob, 'not-a-uuid'), 400, 'invalid')
    expect(role.errors).toHaveProperty('company_role_id')
  })
})

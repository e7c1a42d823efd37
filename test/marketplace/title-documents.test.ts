import { Ajv, type SchemaObject } from 'ajv'
import addFormats from 'ajv-formats'
import { describe, expect, it } from 'vitest'
import { TitleDocuments } from '../../schemas/marketplace.js'
import { testDatabase } from '../helpers/database.js'
import { bearer, DEMO, perTestTokens, problemOf, useTestApp } from '../helpers/app.js'

const context = useTestApp()
const { roles, titles, titleDocuments: docs } = DEMO

const documentsUrl = (companyRoleId: string, titleId: string) => `/api/v1/marketplace/${companyRoleId}/title/${titleId}/documents`

const tokenOf = perTestTokens(context)

async function getDocuments(email: string, companyRoleId: string, titleId: string) {
  return context.app.inject({ method: 'GET', url: documentsUrl(companyRoleId, titleId), headers: bearer(await tokenOf(email)) })
}

/** The schema with `additionalProperties: false` on every object: a field it does not name is an error. */
function closedObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closedObjects)
  if (schema === null || typeof schema !== 'object') return schema
  const closed = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, closedObjects(value)]))
  return closed.type === 'object' ? { ...closed, additionalProperties: false } : closed
}

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('GET /api/v1/marketplace/{company_role_id}/title/{title_id}/documents', () => {
  it("shows a listed title's documents to a buyer who bid, with the signature state", async () => {
    const response = await getDocuments('bob@beta.example', roles.betaBuyer, titles.t1)
    expect(response.statusCode).toBe(200)
    const body = response.json<Record<string, unknown>[]>()
    expect(body.map((document) => [document.id, document.kind])).toEqual([
      [docs.t1Invoice, 'invoice'],
      [docs.t1NfeXml, 'nfe_xml'],
      [docs.t1Contract, 'assignment_contract'],
    ])
    expect(body[0]).toEqual({
      id: docs.t1Invoice,
      kind: 'invoice',
      filename: 'nf-1001.pdf',
      content_type: 'application/pdf',
      size_bytes: 48_213,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      uploaded_at: expect.stringMatching(RFC3339_UTC),
      signature: null,
    })
    expect(body[2]?.signature).toEqual({
      envelope_key: 'demo-envelope-0001',
      status: 'pending',
      completed_at: null,
      signers: [
        { name: 'Alice Almeida', email: 'alice@acme.example', status: 'pending', signed_at: null },
        { name: 'Bob Barros', email: 'bob@beta.example', status: 'pending', signed_at: null },
      ],
    })
  })

  // The body is the database's JSON text, sent without the schema's serializer (src/lib/json-text.ts):
  // hold it to the documented shape, types, formats and patterns, with no field the schema lacks.
  it('answers JSON that matches the response schema, for documents with and without envelopes', async () => {
    const ajv = new Ajv({ allErrors: true, strict: false })
    addFormats.default(ajv)
    const matchesSchema = ajv.compile(closedObjects(TitleDocuments) as SchemaObject)
    for (const [email, role, title] of [
      ['bob@beta.example', roles.betaBuyer, titles.t1],
      ['bob@beta.example', roles.betaBuyer, titles.t5],
      ['dave@delta.example', roles.deltaSeller, titles.t4],
    ] as const) {
      const response = await getDocuments(email, role, title)
      expect(response.statusCode).toBe(200)
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8')
      matchesSchema(response.json())
      expect(matchesSchema.errors ?? []).toEqual([])
    }
  })

  it('shows a completed envelope with its signing times, to the buyer who bought the title', async () => {
    const response = await getDocuments('bob@beta.example', roles.betaBuyer, titles.t5)
    expect(response.statusCode).toBe(200)
    const [invoice, contract] = response.json<{ id: string; signature: Record<string, unknown> | null }[]>()
    expect(invoice?.id).toBe(docs.t5Invoice)
    expect(contract?.id).toBe(docs.t5Contract)
    const signature = contract?.signature as { status: string; completed_at: string; signers: { status: string; signed_at: string }[] }
    expect(signature.status).toBe('signed')
    expect(signature.completed_at).toMatch(RFC3339_UTC)
    expect(signature.signers.map((signer) => signer.status)).toEqual(['signed', 'signed'])
    expect(signature.signers.every((signer) => RFC3339_UTC.test(signer.signed_at))).toBe(true)
    // The last signature completed the envelope.
    expect(signature.signers[1]?.signed_at).toBe(signature.completed_at)
  })

  it('orders documents by upload time, then id', async () => {
    const { db } = await testDatabase()
    await db
      .updateTable('title_documents')
      .set({ uploaded_at: new Date(Date.now() - 10 * 86_400_000) })
      .where('id', '=', docs.t1Contract)
      .execute()
    const response = await getDocuments('alice@acme.example', roles.acmeSeller, titles.t1)
    expect(response.json<{ id: string }[]>().map((document) => document.id)).toEqual([docs.t1Contract, docs.t1Invoice, docs.t1NfeXml])
  })

  it("shows the seller its own draft title, and a seller member with only 'marketplace' too", async () => {
    const alice = await getDocuments('alice@acme.example', roles.acmeSeller, titles.t2)
    expect(alice.statusCode).toBe(200)
    expect(alice.json<{ id: string }[]>().map((document) => document.id)).toEqual([docs.t2Invoice])
    const erin = await getDocuments('erin@acme.example', roles.acmeSeller, titles.t1)
    expect(erin.statusCode).toBe(200)
    expect(erin.json()).toHaveLength(3)
  })

  it('answers an empty list for a visible title without documents', async () => {
    const response = await getDocuments('dave@delta.example', roles.deltaSeller, titles.t4)
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual([])
  })

  it('hides a draft title from a buyer (404)', async () => {
    problemOf(await getDocuments('bob@beta.example', roles.betaBuyer, titles.t2), 404, 'not_found')
  })

  it('shows any buyer a listed title, but not a sold one it neither bid on nor bought', async () => {
    expect((await getDocuments('dave@delta.example', roles.deltaBuyer, titles.t1)).statusCode).toBe(200)
    problemOf(await getDocuments('dave@delta.example', roles.deltaBuyer, titles.t5), 404, 'not_found')
  })

  it('hides a listed title from another seller (404): listing is for buyers', async () => {
    problemOf(await getDocuments('carol@gamma.example', roles.gammaSeller, titles.t1), 404, 'not_found')
    problemOf(await getDocuments('dave@delta.example', roles.deltaSeller, titles.t1), 404, 'not_found')
  })

  it('keeps a title visible to a buyer through its bid after the title leaves the listing', async () => {
    const { db } = await testDatabase()
    await db.updateTable('titles').set({ status: 'cancelled' }).where('id', '=', titles.t1).execute()
    expect((await getDocuments('bob@beta.example', roles.betaBuyer, titles.t1)).statusCode).toBe(200)
    problemOf(await getDocuments('dave@delta.example', roles.deltaBuyer, titles.t1), 404, 'not_found')
  })

  it('keeps a title visible to the buyer that bought it, even without a bid', async () => {
    const { db } = await testDatabase()
    await db.deleteFrom('bids').where('id', '=', DEMO.bids.betaOnT5).execute()
    expect((await getDocuments('bob@beta.example', roles.betaBuyer, titles.t5)).statusCode).toBe(200)
    await db.deleteFrom('operations').where('id', '=', DEMO.operations.t5).execute()
    problemOf(await getDocuments('bob@beta.example', roles.betaBuyer, titles.t5), 404, 'not_found')
  })

  it('answers 404 for an unknown title', async () => {
    problemOf(await getDocuments('bob@beta.example', roles.betaBuyer, '50000000-0000-4000-8000-000000000999'), 404, 'not_found')
  })

  it("answers 404 for another tenant's company role, and for an unknown one", async () => {
    problemOf(await getDocuments('bob@beta.example', roles.acmeSeller, titles.t1), 404, 'not_found')
    problemOf(await getDocuments('bob@beta.example', '30000000-0000-4000-8000-000000000999', titles.t1), 404, 'not_found')
  })

  it("answers 403 to a member without the 'marketplace' permission", async () => {
    const { db } = await testDatabase()
    await db
      .updateTable('memberships')
      .set({ permissions: ['documents', 'chat'] })
      .where('user_id', '=', DEMO.users.erin)
      .where('company_role_id', '=', roles.acmeSeller)
      .execute()
    problemOf(await getDocuments('erin@acme.example', roles.acmeSeller, titles.t1), 403, 'permission_denied')
  })

  it('answers 401 without a token and with a bad one', async () => {
    const missing = await context.app.inject({ method: 'GET', url: documentsUrl(roles.betaBuyer, titles.t1) })
    problemOf(missing, 401, 'not_authenticated')
    const bad = await context.app.inject({ method: 'GET', url: documentsUrl(roles.betaBuyer, titles.t1), headers: bearer('not.a.token') })
    problemOf(bad, 401, 'token_not_valid')
  })

  it('answers 400 for malformed identifiers', async () => {
    const token = await tokenOf('bob@beta.example')
    for (const url of [documentsUrl('not-a-uuid', titles.t1), documentsUrl(roles.betaBuyer, 'not-a-uuid')]) {
      const response = await context.app.inject({ method: 'GET', url, headers: bearer(token) })
      const body = problemOf(response, 400, 'invalid')
      expect(Object.keys(body.errors as object)).toHaveLength(1)
    }
  })

  it('answers with a trailing slash too', async () => {
    const response = await context.app.inject({
      method: 'GET',
      url: `${documentsUrl(roles.betaBuyer, titles.t1)}/`,
      headers: bearer(await tokenOf('bob@beta.example')),
    })
    expect(response.statusCode).toBe(200)
  })
})

import { readFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import createClient from 'openapi-fetch'
import { describe, expect, it } from 'vitest'
import { runPartner } from '../../examples/client/partner.js'
import type { paths } from '../../examples/client/schema.js'
import { clientTypes, CLIENT_TYPES } from '../../scripts/openapi-client.js'
import { DEMO, DEMO_PASSWORD, useTestApp } from '../helpers/app.js'

const ctx = useTestApp()

/** The app listening on a free port of 127.0.0.1 (once per file). */
async function listening(): Promise<string> {
  if (!ctx.app.server.listening) await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
}

describe('the example client generated from /docs/json (examples/client)', () => {
  it('is generated from the document the service publishes now', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/docs/json' })).json<Record<string, unknown>>()
    const committed = await readFile(CLIENT_TYPES, 'utf8')
    // On failure: npm run openapi:client, and review the change of the API it shows.
    expect(committed).toBe(await clientTypes(document))
  })

  it('logs in, refreshes and reads routes 4, 7 and 9 over HTTP', async () => {
    const run = await runPartner(
      await listening(),
      { email: 'bob@beta.example', password: DEMO_PASSWORD },
      { sellerId: DEMO.roles.acmeSeller, titleId: DEMO.titles.t1 },
    )
    expect(run).toEqual({
      companies: ['Fundo Beta FIDC'],
      buyerRoleId: DEMO.roles.betaBuyer,
      sellerComplete: false,
      missing: ['balance_sheet'],
      documents: ['invoice nf-1001.pdf (unsigned)', 'nfe_xml nf-1001.xml (unsigned)', 'assignment_contract cessao-nf-1001.pdf (pending)'],
    })
  })

  it("runs bob's flow in Node with the document's first server as base URL (a relative one cannot)", async () => {
    const document = await (await fetch(`${await listening()}/docs/json`)).json() as { servers: { url: string }[] }
    const relative = createClient<paths>({ baseUrl: '/' })
    await expect(relative.POST('/api/auth/v1/token', { body: { email: 'bob@beta.example', password: DEMO_PASSWORD } }))
      .rejects.toThrow(/parse URL|Invalid URL/i)

    const api = createClient<paths>({ baseUrl: document.servers[0]?.url })
    const login = await api.POST('/api/auth/v1/token', { body: { email: 'bob@beta.example', password: DEMO_PASSWORD } })
    const headers = { authorization: `Bearer ${login.data?.access ?? ''}` }
    const companies = await api.GET('/api/company/v1/get-user-companies', { headers })
    const buyer = companies.data?.[0]?.roles.find((role) => role.role === 'buyer')
    expect(buyer?.company_role_id).toBe(DEMO.roles.betaBuyer)
    const path = { company_role_id: DEMO.roles.betaBuyer, seller_id: DEMO.roles.gammaSeller }
    const check = await api.GET('/api/company/v1/{company_role_id}/buyer/check-documents/{seller_id}', { params: { path }, headers })
    expect(check.data?.complete).toBe(false)
    const solicitation = await api.POST('/api/company/{version}/{company_role_id}/document-solicitation/{seller_id}', {
      params: { path: { version: 'v1', ...path } },
      body: { message: 'Please send the missing documents.' },
      headers,
    })
    expect(solicitation.response.status).toBe(201)
    expect(solicitation.data?.document_types).toEqual(
      check.data?.documents.filter((document) => document.status !== 'approved').map((document) => document.type),
    )
  })
})

import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import createClient from 'openapi-fetch'
import { describe, expect, it } from 'vitest'
import { runPartner, syncCustomer } from '../../examples/client/partner.js'
import type { FetchLike } from '../../packages/client/src/index.js'
import type { paths } from '../../packages/client/src/openapi.js'
import { buildTestApp, DEMO, DEMO_PASSWORD, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import { freePort } from '../helpers/ports.js'
import { runProcess } from '../helpers/run-process.js'

const ctx = useTestApp()

/** The app listening on a free port of 127.0.0.1 (once per file). */
async function listening(): Promise<string> {
  if (!ctx.app.server.listening) await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
}

describe('the example partner program on the client package (examples/client)', () => {
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
      solicitation: { id: expect.any(String), documentTypes: ['balance_sheet'], replayed: false },
      retries: [],
    })
  })

  it('retries as docs/retries.md says: a lost answer to route 5 is replayed, a 503 waits its Retry-After, nothing is done twice', async () => {
    if (!ctx.app.server.listening) await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = ctx.app.server.address() as AddressInfo
    const lost = new Set<string>()
    // The service answers, but the answer never reaches the client (a connection reset on the way back).
    const transport: FetchLike = async (url, init) => {
      const path = new URL(url).pathname
      if (path.includes('/get-user-companies') && !lost.has('busy')) {
        lost.add('busy')
        return new Response(JSON.stringify({ code: 'service_unavailable' }), {
          status: 503,
          headers: { 'retry-after': '1', 'content-type': 'application/problem+json' },
        })
      }
      const response = await fetch(url, init)
      if (path.includes('/document-solicitation/') && !lost.has('solicitation')) {
        lost.add('solicitation')
        throw new TypeError('fetch failed: the answer was lost')
      }
      return response
    }
    const started = Date.now()
    const run = await runPartner(
      `http://127.0.0.1:${port}`,
      { email: 'bob@beta.example', password: DEMO_PASSWORD },
      { sellerId: DEMO.roles.acmeSeller, titleId: DEMO.titles.t1 },
      { fetch: transport, retry: { baseDelayMs: 10 } },
    )
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
    expect(run.retries).toEqual(['1 503', '1 no answer: fetch failed: the answer was lost'])
    expect(run.solicitation).toEqual({ id: expect.any(String), documentTypes: ['balance_sheet'], replayed: true })
    const { db } = await testDatabase()
    const open = await db
      .selectFrom('document_solicitations')
      .select('id')
      .where('seller_company_role_id', '=', DEMO.roles.acmeSeller)
      .where('status', '=', 'open')
      .execute()
    expect(open).toEqual([{ id: run.solicitation?.id }])
  })

  it('saves a customer (route 11) with a key: the answer lost, the retry gets it again, the row written once', async () => {
    if (!ctx.app.server.listening) await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = ctx.app.server.address() as AddressInfo
    let lost = false
    const transport: FetchLike = async (url, init) => {
      const response = await fetch(url, init)
      if (!lost && new URL(url).pathname.includes('/customers/')) {
        lost = true
        throw new TypeError('fetch failed: the answer was lost')
      }
      return response
    }
    const customer = { id: randomUUID(), name: 'Partner Customer Ltda', tax_id: '11444777000161', email: 'billing@partner.example' }
    const run = await syncCustomer(`http://127.0.0.1:${port}`, { email: 'alice@acme.example', password: DEMO_PASSWORD }, customer, {
      fetch: transport,
      retry: { baseDelayMs: 10 },
    })
    expect(run).toEqual({
      saved: { id: customer.id, name: customer.name, updated_at: expect.any(String) },
      replayed: true,
      retries: ['1 no answer: fetch failed: the answer was lost'],
    })
    const { db } = await testDatabase()
    const rows = await db.selectFrom('customers').select(['name', 'created_at', 'updated_at']).where('id', '=', customer.id).execute()
    expect(rows).toHaveLength(1)
    expect(rows[0]!.updated_at.toISOString()).toBe(rows[0]!.created_at.toISOString())
  })

  it('against a stopped server ends in one line naming the address, not a stack (issue 44, item 7)', async () => {
    const port = await freePort()
    const run = await runProcess(process.execPath, ['--import', 'tsx', 'examples/client/partner.ts', `http://127.0.0.1:${port}`], {
      PATH: process.env.PATH ?? '',
    })
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toBe(`partner: obtainTokenPair: no answer (fetch failed) (is the service running at http://127.0.0.1:${port}? npm start)\n`)
  })

  it("runs bob's flow in Node with the document's first server, PUBLIC_BASE_URL, as base URL (a relative one cannot)", async () => {
    // The deployment says where partners reach it (never the Host a request named, issue 33).
    const port = await freePort()
    const deployed = await buildTestApp({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}` })
    await deployed.listen({ port, host: '127.0.0.1' })
    try {
      await bobsFlow((await (await fetch(`http://127.0.0.1:${port}/docs/json`)).json()) as { servers: { url: string }[] })
    } finally {
      await deployed.close()
    }
  })
})

/** Bob's flow in Node, with the document's first server as base URL. */
async function bobsFlow(document: { servers: { url: string }[] }): Promise<void> {
  const relative = createClient<paths>({ baseUrl: '/' })
  await expect(relative.POST('/api/auth/v1/token', { body: { email: 'bob@beta.example', password: DEMO_PASSWORD } })).rejects.toThrow(
    /parse URL|Invalid URL/i,
  )

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
}

import { describe, expect, it } from 'vitest'
import { testDatabase } from '../helpers/database.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'

const ctx = useTestApp()
const ROUTE = '/api/company/v1/get-user-companies'
const listFor = async (email: string) => {
  const { access } = await obtainTokens(ctx.app, email, DEMO_PASSWORD)
  return ctx.app.inject({ method: 'GET', url: ROUTE, headers: bearer(access) })
}

describe('GET /api/company/v1/get-user-companies', () => {
  it("lists the caller's company with its role and permissions", async () => {
    const response = await listFor('alice@acme.example')
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual([
      {
        id: DEMO.companies.acme,
        name: 'Acme Indústria Ltda',
        trade_name: 'Acme',
        tax_id: '11222333000181',
        roles: [{ company_role_id: DEMO.roles.acmeSeller, role: 'seller', permissions: ['admin'] }],
      },
    ])
  })

  it('groups several roles of one company, and orders companies by name', async () => {
    const { db } = await testDatabase()
    await db
      .insertInto('memberships')
      .values([
        { user_id: DEMO.users.dave, company_role_id: DEMO.roles.betaBuyer, permissions: ['chat', 'documents'] },
        { user_id: DEMO.users.dave, company_role_id: DEMO.roles.acmeSeller, permissions: ['marketplace'] },
      ])
      .execute()
    const body = (await listFor('dave@delta.example')).json()
    expect(body.map((company: { name: string }) => company.name)).toEqual(['Acme Indústria Ltda', 'Delta Participações S.A.', 'Fundo Beta FIDC'])
    expect(body[1].roles).toEqual([
      { company_role_id: DEMO.roles.deltaBuyer, role: 'buyer', permissions: ['admin'] },
      { company_role_id: DEMO.roles.deltaSeller, role: 'seller', permissions: ['admin'] },
    ])
    expect(body[2].roles[0].permissions).toEqual(['chat', 'documents'])
  })

  it('leaves out inactive memberships, roles and companies', async () => {
    const { db } = await testDatabase()
    await db.updateTable('company_roles').set({ is_active: false }).where('id', '=', DEMO.roles.deltaBuyer).execute()
    await db.updateTable('memberships').set({ is_active: false }).where('user_id', '=', DEMO.users.erin).execute()
    const dave = (await listFor('dave@delta.example')).json()
    expect(dave[0].roles.map((role: { role: string }) => role.role)).toEqual(['seller'])
    expect((await listFor('erin@acme.example')).json()).toEqual([])
    await db.updateTable('companies').set({ is_active: false }).where('id', '=', DEMO.companies.acme).execute()
    expect((await listFor('alice@acme.example')).json()).toEqual([])
  })

  it('never shows another tenant: each user sees only their own companies', async () => {
    const bob = (await listFor('bob@beta.example')).json()
    expect(bob.map((company: { id: string }) => company.id)).toEqual([DEMO.companies.beta])
  })

  it('answers 401 without a token or with a bad one', async () => {
    problemOf(await ctx.app.inject({ method: 'GET', url: ROUTE }), 401, 'not_authenticated')
    problemOf(await ctx.app.inject({ method: 'GET', url: ROUTE, headers: bearer('x.y.z') }), 401, 'token_not_valid')
  })

  it('answers with or without a trailing slash', async () => {
    const { access } = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const response = await ctx.app.inject({ method: 'GET', url: `${ROUTE}/`, headers: bearer(access) })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toHaveLength(1)
  })
})

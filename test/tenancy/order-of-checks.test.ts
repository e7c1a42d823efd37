import { Type } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { MemoryCounterStore } from '../../src/auth/login-throttle.js'
import type { LogDestination } from '../../src/logging.js'
import { readUserCompanies } from '../../src/tenancy/user-companies.js'
import type { Permission } from '../../src/vocabulary.js'
import { testDatabase } from '../helpers/database.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, testConfig, useTestApp } from '../helpers/app.js'

const ctx = useTestApp()
const { roles, users } = DEMO
const MALFORMED = 'not-a-uuid'

interface CompanyRoute {
  name: string
  method: 'GET' | 'POST' | 'DELETE'
  url: (companyRoleId: string) => string
  payload?: Record<string, unknown>
  permission: Permission
  /** A user and the role they act for, with every permission. */
  member: { email: string; userId: string; roleId: string }
  /** A role of another tenant (of the wrong kind where the route has one: 404 comes before 403). */
  otherTenantRole: string
  /** A role of the member's of the wrong kind, for routes that are for one kind only. */
  wrongKind?: { email: string; roleId: string }
}

const bob = { email: 'bob@beta.example', userId: users.bob, roleId: roles.betaBuyer }
const alice = { email: 'alice@acme.example', userId: users.alice, roleId: roles.acmeSeller }

/** Every company-scoped route (§3): 5, 6, 7, 8, 9 and 11. */
const ROUTES: CompanyRoute[] = [
  {
    name: 'route 5',
    permission: 'documents',
    method: 'POST',
    url: (role) => `/api/company/v1/${role}/document-solicitation/${roles.acmeSeller}`,
    payload: {},
    member: bob,
    otherTenantRole: roles.gammaSeller,
    wrongKind: { email: 'dave@delta.example', roleId: roles.deltaSeller },
  },
  {
    name: 'route 6',
    permission: 'chat',
    method: 'GET',
    url: (role) => `/api/company/v1/${role}/chat/partners/${roles.acmeSeller}/presence`,
    member: bob,
    otherTenantRole: roles.gammaSeller,
  },
  {
    name: 'route 7',
    permission: 'documents',
    method: 'GET',
    url: (role) => `/api/company/v1/${role}/buyer/check-documents/${roles.acmeSeller}`,
    member: bob,
    otherTenantRole: roles.gammaSeller,
    wrongKind: { email: 'dave@delta.example', roleId: roles.deltaSeller },
  },
  {
    name: 'route 8',
    permission: 'bank_accounts',
    method: 'DELETE',
    url: (role) => `/api/company/v1/${role}/bank-account/${DEMO.bankAccounts.acme2}`,
    member: alice,
    otherTenantRole: roles.betaBuyer,
  },
  {
    name: 'route 9',
    permission: 'marketplace',
    method: 'GET',
    url: (role) => `/api/v1/marketplace/${role}/title/${DEMO.titles.t1}/documents`,
    member: bob,
    otherTenantRole: roles.gammaSeller,
  },
  {
    name: 'route 11',
    permission: 'customers',
    method: 'POST',
    url: (role) => `/api/company/v1/${role}/customers/7a000000-0000-4000-8000-000000000001`,
    payload: { name: 'Order Test Ltda', tax_id: '11222333000181' },
    member: alice,
    otherTenantRole: roles.betaBuyer,
    wrongKind: { email: 'dave@delta.example', roleId: roles.deltaBuyer },
  },
]

function send(route: CompanyRoute, roleId: string, headers: Record<string, string> = {}) {
  return ctx.app.inject({
    method: route.method,
    url: route.url(roleId),
    headers,
    ...(route.payload ? { payload: route.payload } : {}),
  })
}

describe('the order of checks on every company-scoped route: 401 token, 400 input, 401 user, 404 member, 403 role and permission', () => {
  for (const route of ROUTES) {
    it(`${route.name}`, async () => {
      const { db } = await testDatabase()
      const { access } = await obtainTokens(ctx.app, route.member.email, DEMO_PASSWORD)

      // The token comes first, even before a malformed path.
      problemOf(await send(route, MALFORMED), 401, 'not_authenticated')
      problemOf(await send(route, MALFORMED, bearer('not.a.token')), 401, 'token_not_valid')
      // Then the input, even for a role the caller is no member of.
      problemOf(await send(route, MALFORMED, bearer(access)), 400, 'invalid')
      // Then the membership: another tenant's role is 404, whatever its kind.
      problemOf(await send(route, route.otherTenantRole, bearer(access)), 404, 'not_found')
      if (route.wrongKind) {
        const other = await obtainTokens(ctx.app, route.wrongKind.email, DEMO_PASSWORD)
        problemOf(await send(route, route.wrongKind.roleId, bearer(other.access)), 403, 'wrong_role')
      }
      // Then the permission.
      const others = (['marketplace', 'chat'] as const).filter((permission) => permission !== route.permission)
      await db.updateTable('memberships').set({ permissions: [...others] })
        .where('user_id', '=', route.member.userId).where('company_role_id', '=', route.member.roleId).execute()
      problemOf(await send(route, route.member.roleId, bearer(access)), 403, 'permission_denied')

      // A disabled user: still 400 for a malformed path (input before the user), then 401.
      await db.updateTable('users').set({ is_active: false }).where('id', '=', route.member.userId).execute()
      problemOf(await send(route, MALFORMED, bearer(access)), 400, 'invalid')
      problemOf(await send(route, route.member.roleId, bearer(access)), 401, 'token_not_valid')
    })
  }

  it('route 4 (no company role): 401 token, then 401 user', async () => {
    const { db } = await testDatabase()
    const url = '/api/company/v1/get-user-companies'
    const { access } = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    problemOf(await ctx.app.inject({ method: 'GET', url }), 401, 'not_authenticated')
    problemOf(await ctx.app.inject({ method: 'GET', url, headers: bearer('not.a.token') }), 401, 'token_not_valid')
    expect((await ctx.app.inject({ method: 'GET', url, headers: bearer(access) })).statusCode).toBe(200)
    await db.updateTable('users').set({ is_active: false }).where('id', '=', users.alice).execute()
    problemOf(await ctx.app.inject({ method: 'GET', url, headers: bearer(access) }), 401, 'token_not_valid')
  })
})

describe('the safety net of the tenancy pipeline', () => {
  it('a company-scoped route that forgets to admit the member answers 500 (logged), or 404 to a non-member, never data', async () => {
    const lines: string[] = []
    const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }
    const app = await buildApp(testConfig({ LOG_LEVEL: 'error' }), {
      database: await testDatabase(),
      counterStore: new MemoryCounterStore(),
      logDestination,
    })
    const params = Type.Object({ company_role_id: Type.String({ format: 'uuid' }) })
    // Reads its own data and forgets the member: the net must stop the success.
    app.get('/throwaway/in-statement/:company_role_id', {
      schema: { params },
      config: { companyRole: { permission: 'chat' }, principalInStatement: true },
    }, async () => ({ secret: 'leaked' }))
    // Admits the user with a principal-only statement, but not the member.
    app.get('/throwaway/user-only/:company_role_id', {
      schema: { params },
      config: { companyRole: { permission: 'chat' }, principalInStatement: true },
    }, async (request) => ({ secret: 'leaked', companies: await readUserCompanies(request) }))
    // Leaves the check to the pipeline and serves data without looking: a non-member still gets 404.
    app.get('/throwaway/piped/:company_role_id', {
      schema: { params },
      config: { companyRole: { permission: 'chat' } },
    }, async () => ({ secret: 'leaked' }))
    await app.ready()
    try {
      const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      for (const route of ['in-statement', 'user-only']) {
        for (const roleId of [roles.acmeSeller, roles.betaBuyer]) {
          const response = await app.inject({ method: 'GET', url: `/throwaway/${route}/${roleId}`, headers: bearer(access) })
          problemOf(response, 500, 'server_error')
          expect(response.body).not.toContain('leaked')
        }
      }
      expect(lines.some((line) => line.includes('without admitting the member'))).toBe(true)
      expect(lines.some((line) => line.includes('without admitting'))).toBe(true)
      const piped = await app.inject({ method: 'GET', url: `/throwaway/piped/${roles.betaBuyer}`, headers: bearer(access) })
      problemOf(piped, 404, 'not_found')
      expect(piped.body).not.toContain('leaked')
    } finally {
      await app.close()
    }
  })
})

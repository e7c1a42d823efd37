import type { FastifyPluginAsync } from 'fastify'
import { describe, expect, it } from 'vitest'
import type { DeclaredRoute } from '../../src/tenancy/plugin.js'
import { testDatabase } from '../helpers/database.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { declaredRoutes, exampleBody, exampleParams, MEMBERS, pathOf, routeName } from '../helpers/declared-routes.js'

const { roles } = DEMO
const MALFORMED = 'not-a-uuid'

/**
 * For the 404-member case, by path parameter: another tenant's role with the ids of a request of its
 * own (its chat partner, its bank account), so that a membership check admitting anyone would be
 * answered, not 404; the examples' ids belong to the example role and would be 404 anyway (issue 42, test c).
 */
const OTHER_TENANTS_OWN_REQUEST: Record<string, Record<string, string>> = {
  partner_company_role_id: { company_role_id: roles.gammaSeller, partner_company_role_id: roles.deltaBuyer },
  bank_account_id: { company_role_id: roles.gammaSeller, bank_account_id: DEMO.bankAccounts.gamma1 },
}

/**
 * The order of checks (README), proven on every route the app declares (its registry, so a new
 * route is covered without editing this file): 401 token, 400 input, 401 user, then on a company
 * route 404 member, 403 role and permission. Each route is called with its schema's examples.
 */
export async function describeOrderOfChecks(extraRoutes?: FastifyPluginAsync): Promise<void> {
  const routes = await declaredRoutes(extraRoutes)
  const ctx = useTestApp({}, { extraRoutes })

  const send = (route: DeclaredRoute, params: Record<string, string>, headers: Record<string, string> = {}) => {
    const payload = exampleBody(route)
    return ctx.app.inject({
      method: route.method as 'GET',
      url: pathOf(route, params),
      headers,
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    })
  }

  describe('the order of checks on every company-scoped route: 401 token, 400 input, 401 user, 404 member, 403 role and permission', () => {
    for (const route of routes) {
      const tenancy = route.tenancy
      if (tenancy.kind !== 'company') continue
      const { role, permission } = tenancy.requirement
      const example = exampleParams(route)
      const member =
        role === 'buyer'
          ? MEMBERS[roles.betaBuyer]!
          : role === 'seller'
            ? MEMBERS[roles.acmeSeller]!
            : (MEMBERS[example.company_role_id!] ?? MEMBERS[roles.betaBuyer]!)
      // Another tenant's role, of the wrong kind where the route has one (404 comes before 403).
      const otherTenantRole = member.roleId === roles.acmeSeller ? roles.betaBuyer : roles.gammaSeller
      const wrongKind = role === 'buyer' ? roles.deltaSeller : role === 'seller' ? roles.deltaBuyer : undefined
      const as = (roleId: string) => ({ ...example, company_role_id: roleId })
      const ownRequest = Object.keys(example)
        .map((name) => OTHER_TENANTS_OWN_REQUEST[name])
        .find((params) => params !== undefined)
      const notMember = ownRequest ? { ...example, ...ownRequest } : as(otherTenantRole)

      it(routeName(route), async () => {
        const { db } = await testDatabase()
        const { access } = await obtainTokens(ctx.app, member.email, DEMO_PASSWORD)

        // The token comes first, even before a malformed path.
        problemOf(await send(route, as(MALFORMED)), 401, 'not_authenticated')
        problemOf(await send(route, as(MALFORMED), bearer('not.a.token')), 401, 'token_not_valid')
        // Then the input, even for a role the caller is no member of.
        problemOf(await send(route, as(MALFORMED), bearer(access)), 400, 'invalid')
        // Then the membership: another tenant's role is 404, whatever its kind (its own request's ids where known).
        problemOf(await send(route, as(otherTenantRole), bearer(access)), 404, 'not_found')
        problemOf(await send(route, notMember, bearer(access)), 404, 'not_found')
        if (wrongKind) {
          const other = await obtainTokens(ctx.app, 'dave@delta.example', DEMO_PASSWORD)
          problemOf(await send(route, as(wrongKind), bearer(other.access)), 403, 'wrong_role')
        }
        // Then the permission.
        const others = (['marketplace', 'chat'] as const).filter((candidate) => candidate !== permission)
        await db
          .updateTable('memberships')
          .set({ permissions: [...others] })
          .where('user_id', '=', member.userId)
          .where('company_role_id', '=', member.roleId)
          .execute()
        problemOf(await send(route, as(member.roleId), bearer(access)), 403, 'permission_denied')

        // A disabled user: still 400 for a malformed path (input before the user), then 401.
        await db.updateTable('users').set({ is_active: false }).where('id', '=', member.userId).execute()
        problemOf(await send(route, as(MALFORMED), bearer(access)), 400, 'invalid')
        problemOf(await send(route, as(member.roleId), bearer(access)), 401, 'token_not_valid')
      })
    }

    for (const route of routes.filter((candidate) => candidate.tenancy.kind === 'user')) {
      it(`${routeName(route)} (no company role): 401 token, then 401 user`, async () => {
        const { db } = await testDatabase()
        const url = pathOf(route, exampleParams(route))
        const { access } = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
        problemOf(await ctx.app.inject({ method: route.method as 'GET', url }), 401, 'not_authenticated')
        problemOf(await ctx.app.inject({ method: route.method as 'GET', url, headers: bearer('not.a.token') }), 401, 'token_not_valid')
        expect((await ctx.app.inject({ method: route.method as 'GET', url, headers: bearer(access) })).statusCode).toBe(200)
        await db.updateTable('users').set({ is_active: false }).where('id', '=', DEMO.users.alice).execute()
        problemOf(await ctx.app.inject({ method: route.method as 'GET', url, headers: bearer(access) }), 401, 'token_not_valid')
      })
    }
  })
}

import { describe, expect, it } from 'vitest'
import { userRoute } from '../../src/tenancy/routes.js'
import type { DeclaredRoute } from '../../src/tenancy/plugin.js'
import { PERMISSIONS, type Permission } from '../../src/vocabulary.js'
import { testDatabase } from '../helpers/database.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { declaredRoutes, exampleBody, exampleParams, MEMBERS, pathOf, routeName } from '../helpers/declared-routes.js'

/*
 * The member checks the order-of-checks suite cannot tell apart with admin members, on every company
 * route of the registry: the role's kind before the permission, and §3's active company. Each case
 * first shows the answer the rule changes (a live member lacking the permission is 403
 * permission_denied), so dropping or reordering the rule fails it.
 */

const declared = await declaredRoutes()
const routes = declared.filter((route) => route.tenancy.kind === 'company')
const ctx = useTestApp()
const { roles, users, companies } = DEMO

/** Every permission but admin and the route's own: a member who is not allowed. */
const without = (permission: Permission) => PERMISSIONS.filter((candidate) => candidate !== 'admin' && candidate !== permission)

function send(route: DeclaredRoute, companyRoleId: string, access: string) {
  const payload = exampleBody(route)
  return ctx.app.inject({
    method: route.method as 'GET',
    url: pathOf(route, { ...exampleParams(route), company_role_id: companyRoleId }),
    headers: bearer(access),
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  })
}

async function restrict(userId: string, companyRoleId: string, permission: Permission) {
  const { db } = await testDatabase()
  await db
    .updateTable('memberships')
    .set({ permissions: without(permission) })
    .where('user_id', '=', userId)
    .where('company_role_id', '=', companyRoleId)
    .execute()
}

describe('the member checks on every company-scoped route', () => {
  for (const route of routes) {
    if (route.tenancy.kind !== 'company') continue
    const { role, permission } = route.tenancy.requirement

    if (role) {
      it(`${routeName(route)}: a non-admin member of the wrong kind of role, without the permission, is 403 wrong_role (the kind before the permission)`, async () => {
        // Dave is a member of Delta's seller and buyer roles: the other kind is the wrong one.
        const wrongKind = role === 'buyer' ? roles.deltaSeller : roles.deltaBuyer
        await restrict(users.dave, wrongKind, permission)
        const { access } = await obtainTokens(ctx.app, 'dave@delta.example', DEMO_PASSWORD)
        const body = problemOf(await send(route, wrongKind, access), 403, 'wrong_role')
        expect(body.detail).toBe(`This action is for a ${role} company role.`)
      })
    }

    it(`${routeName(route)}: a member of an inactive company, or of an inactive role, or by an inactive membership, is 404`, async () => {
      const member = role === 'buyer' ? MEMBERS[roles.betaBuyer]! : MEMBERS[roles.acmeSeller]!
      const company = member.roleId === roles.betaBuyer ? companies.beta : companies.acme
      const { db } = await testDatabase()
      await restrict(member.userId, member.roleId, permission)
      const { access } = await obtainTokens(ctx.app, member.email, DEMO_PASSWORD)
      // The control: the membership is live, so the missing permission is what answers.
      const denied = problemOf(await send(route, member.roleId, access), 403, 'permission_denied')
      expect(denied.detail).toBe('You do not have permission to perform this action.')

      await db.updateTable('companies').set({ is_active: false }).where('id', '=', company).execute()
      expect(problemOf(await send(route, member.roleId, access), 404, 'not_found').detail).toBe('Not found.')
      await db.updateTable('companies').set({ is_active: true }).where('id', '=', company).execute()
      problemOf(await send(route, member.roleId, access), 403, 'permission_denied')

      await db.updateTable('company_roles').set({ is_active: false }).where('id', '=', member.roleId).execute()
      problemOf(await send(route, member.roleId, access), 404, 'not_found')
      await db.updateTable('company_roles').set({ is_active: true }).where('id', '=', member.roleId).execute()

      await db
        .updateTable('memberships')
        .set({ is_active: false })
        .where('user_id', '=', member.userId)
        .where('company_role_id', '=', member.roleId)
        .execute()
      problemOf(await send(route, member.roleId, access), 404, 'not_found')
    })
  }
})

describe('the companies a login lists (route 2)', () => {
  it('leaves out a company no longer active, with every role of it', async () => {
    const login = () =>
      ctx.app.inject({ method: 'POST', url: '/api/auth/v1/login', payload: { email: 'dave@delta.example', password: DEMO_PASSWORD } })
    const before = (await login()).json<{ companies: { id: string }[] }>()
    expect(before.companies.map((company) => company.id)).toContain(companies.delta)
    const { db } = await testDatabase()
    await db.updateTable('companies').set({ is_active: false }).where('id', '=', companies.delta).execute()
    const after = (await login()).json<{ companies: { id: string }[] }>()
    expect(after.companies.map((company) => company.id)).toEqual(before.companies.map((company) => company.id).filter((id) => id !== companies.delta))
  })
})

describe('the statement of every read', () => {
  it('checks the token family with the user, and computes a company read only for a member', () => {
    const reads = declared.filter((route) => route.tenancy.statement !== undefined)
    expect(reads.length).toBeGreaterThan(1)
    for (const route of reads) {
      const text = route.tenancy.statement!.sql
      expect(text).toContain('"token_families"."revoked_at" is null')
      // A non-member's request runs no data query: its rows could only be thrown away after it.
      if (route.tenancy.kind === 'company') expect(text).toContain('"member"."member_role_id" is not null')
    }
  })
})

describe('a user route without a read (its own query for the principal)', () => {
  it("hands the handler the token's user, and answers 401 once the user is disabled", async () => {
    const { db } = await testDatabase()
    const app = await buildTestApp(
      {},
      {
        conformance: false,
        extraRoutes: async (app) =>
          void app.route(
            userRoute({ method: 'GET', url: '/throwaway/me', schema: {}, handler: async (_request, _reply, { user }) => ({ id: user.id }) }),
          ),
      },
    )
    try {
      const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      expect((await app.inject({ method: 'GET', url: '/throwaway/me', headers: bearer(access) })).json()).toEqual({ id: users.alice })
      await db.updateTable('users').set({ is_active: false }).where('id', '=', users.alice).execute()
      problemOf(await app.inject({ method: 'GET', url: '/throwaway/me', headers: bearer(access) }), 401, 'token_not_valid')
    } finally {
      await app.close()
    }
  })
})

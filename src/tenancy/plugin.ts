import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { authorise, type CompanyRoleContext, type RoleRequirement } from './membership.js'
import { PresenceTracker } from '../company/chat/presence.js'
import type { PrincipalWithMembership } from './principal.js'
import { admitUser } from '../plugins/authentication.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route acts for `{company_role_id}` and needs this membership (§3). */
    companyRole?: RoleRequirement
  }
  interface FastifyRequest {
    /** Set on routes with a `companyRole` config, after the membership check. */
    companyRole: CompanyRoleContext
    /** The membership the JWT hook fetched with the user, saving this check its own query. */
    prefetchedMembership: { companyRoleId: string; membership: CompanyRoleContext | undefined } | null
  }
  interface FastifyInstance {
    presence: PresenceTracker
  }
}

/**
 * The membership check every company-scoped route shares: a `preHandler` (after the JWT hook and
 * schema validation, so a malformed id is 400) driven by the route's `companyRole` config. A
 * request that passes marks its company role seen, which feeds chat presence.
 */
export default fp(
  async function tenancyPlugin(app: FastifyInstance) {
    app.decorate('presence', new PresenceTracker(app.db))
    app.decorateRequest('companyRole', null as unknown as CompanyRoleContext)
    app.decorateRequest('prefetchedMembership', null)

    app.addHook('preHandler', async (request: FastifyRequest) => {
      const { companyRole: requirement, principalInStatement } = request.routeOptions.config
      if (!requirement || principalInStatement) return
      const { company_role_id: companyRoleId } = request.params as { company_role_id: string }
      // The JWT hook fetched it with the user (src/tenancy/principal.ts); validation has made sure
      // the id it used is the well-formed one in the path.
      const prefetched = request.prefetchedMembership
      if (prefetched?.companyRoleId !== companyRoleId) throw new Error('membership was not prefetched for this company role')
      await admitMembership(request, prefetched.membership, requirement)
    })
  },
  { name: 'tenancy', dependencies: ['database', 'authentication'] },
)

/** 404 / 403 by src/tenancy/membership.ts; a request that passes marks its company role seen, which feeds chat presence. */
async function admitMembership(
  request: FastifyRequest,
  membership: CompanyRoleContext | undefined,
  requirement: RoleRequirement,
): Promise<CompanyRoleContext> {
  request.companyRole = authorise(membership, requirement)
  await request.server.presence.markSeen(request.companyRole.companyRoleId)
  return request.companyRole
}

/**
 * For `principalInStatement` routes with a `companyRole` config: the same checks, in the same
 * order, as the JWT hook and the `preHandler` above (401, then 404 / 403), on the principal and
 * membership that the handler's statement read.
 */
export async function admitMember(request: FastifyRequest, principal: PrincipalWithMembership | undefined): Promise<CompanyRoleContext> {
  const requirement = request.routeOptions.config.companyRole
  if (!requirement) throw new Error('admitMember on a route without a companyRole config')
  admitUser(request, principal?.user)
  return admitMembership(request, principal?.membership, requirement)
}

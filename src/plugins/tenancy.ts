import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { authorise, findMembership, type CompanyRoleContext, type RoleRequirement } from '../tenancy/membership.js'
import { PresenceTracker } from '../tenancy/presence.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route acts for `{company_role_id}` and needs this membership (§3). */
    companyRole?: RoleRequirement
  }
  interface FastifyRequest {
    /** Set on routes with a `companyRole` config, after the membership check. */
    companyRole: CompanyRoleContext
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

    app.addHook('preHandler', async (request: FastifyRequest) => {
      const requirement = request.routeOptions.config.companyRole
      if (!requirement) return
      const { company_role_id: companyRoleId } = request.params as { company_role_id: string }
      const membership = await findMembership(app.db, request.auth.user.id, companyRoleId)
      request.companyRole = authorise(membership, requirement)
      await app.presence.markSeen(companyRoleId)
    })
  },
  { name: 'tenancy', dependencies: ['database', 'authentication'] },
)

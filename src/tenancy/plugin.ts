import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { admitMember, admitUser, principalKey, scopedPrincipalKey } from './admission.js'
import type { CompanyRoleContext, RoleRequirement } from './membership.js'
import { findActiveUserForToken, findUserWithMembership, type AuthenticatedUser } from './principal.js'

export interface AuthContext {
  user: AuthenticatedUser
  claims: FastifyRequest['tokenClaims']
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route acts for `{company_role_id}` and needs this membership (§3). */
    companyRole?: RoleRequirement
    /**
     * The route reads the principal (and membership) in its own statement, built by
     * src/tenancy/scoped-statement.ts, which admits the caller; the pipeline then skips its own read.
     */
    principalInStatement?: boolean
  }
  interface FastifyRequest {
    /** Set once the token's user is known to be active. */
    auth: AuthContext
    /** Set on routes with a `companyRole` config, after the membership check. */
    companyRole: CompanyRoleContext
  }
}

async function assertAdmitted(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  // `public` is read per request: the docs plugin marks its routes public in its own onRoute hook, after this one.
  if (reply.statusCode >= 400 || request.routeOptions.config.public) return payload
  if (!request.auth) throw new Error('a route answered without admitting the principal')
  if (request.routeOptions.config.companyRole && !request.companyRole) {
    throw new Error('a company-scoped route answered without admitting the member')
  }
  return payload
}

/**
 * The tenancy pipeline, the same on every authenticated route. After the JWT hook
 * (src/auth/authentication.ts: the token's signature and claims, 401) and schema validation
 * (400), this preHandler reads the token's user, with their membership of `{company_role_id}` on a
 * route with a `companyRole` config, in one query, and admits them: 401 for an inactive user or a
 * revoked family, 404 for no active membership, 403 for the wrong kind of role or a missing
 * permission. A `principalInStatement` route does the same inside its own statement.
 */
export default fp(
  async function tenancyPlugin(app: FastifyInstance) {
    app.decorateRequest('auth', null as unknown as AuthContext)
    app.decorateRequest('companyRole', null as unknown as CompanyRoleContext)

    app.addHook('preHandler', async (request: FastifyRequest) => {
      const config = request.routeOptions.config
      if (request.is404 || config.public || config.principalInStatement) return
      if (config.companyRole) admitMember(request, await findUserWithMembership(app.db, scopedPrincipalKey(request)))
      else admitUser(request, await findActiveUserForToken(app.db, principalKey(request)))
    })

    // The net: an authenticated route's success that nobody admitted (or, on a company-scoped
    // route, whose member nobody admitted) is a bug and must not reach the client. onSend, not
    // preSerialization: a body sent as JSON text (route 9) skips serialisation and its hooks.
    app.addHook('onRoute', (route) => {
      const existing = route.onSend ?? []
      route.onSend = [...(Array.isArray(existing) ? existing : [existing]), assertAdmitted]
    })
  },
  { name: 'tenancy', dependencies: ['database', 'authentication'] },
)

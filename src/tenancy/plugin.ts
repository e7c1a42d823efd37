import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { admitMember, admitUser, principalKey, scopedPrincipalKey } from './admission.js'
import type { CompanyRoleContext } from './membership.js'
import { findActiveUserForToken, findUserWithMembership, type AuthenticatedUser } from './principal.js'
import type { TenancyDeclaration } from './routes.js'

export interface AuthContext {
  user: AuthenticatedUser
  claims: FastifyRequest['tokenClaims']
}

/** A route declared with companyRoute or userRoute (src/tenancy/routes.ts), as the app registered it. */
export interface DeclaredRoute {
  method: string
  /** Fastify's form, `:name` per parameter, with the prefix. */
  url: string
  tenancy: TenancyDeclaration
  schema: FastifySchema | undefined
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by companyRoute / userRoute only: how the pipeline admits the caller, and the read it runs. */
    tenancy?: TenancyDeclaration
  }
  interface FastifyRequest {
    /** Set once the token's user is known to be active; null before, and on public routes. */
    auth: AuthContext | null
    /** Set on company routes after the membership check; null elsewhere. */
    companyRole: CompanyRoleContext | null
    /** A read's data, from the statement that admitted the caller (handed to the handler by the route's construct). */
    tenancyData: unknown
  }
  interface FastifyInstance {
    /** Every authenticated route the app declared, in registration order: the tests' route list. */
    tenancyRoutes: readonly DeclaredRoute[]
  }
}

async function assertAdmitted(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  // `public` is read per request: the docs plugin marks its routes public in its own onRoute hook, after this one.
  if (reply.statusCode >= 400 || request.routeOptions.config.public) return payload
  if (!request.auth) throw new Error('a route answered without admitting the principal')
  if (request.routeOptions.config.tenancy?.kind === 'company' && !request.companyRole) {
    throw new Error('a company-scoped route answered without admitting the member')
  }
  return payload
}

const COMPANY_ROLE_ID = 'company_role_id'

/** A property or parameter name that carries a company role id: `company_role_id`, or a header spelling of it (`Company-Role-Id`, `X-Company-Role-Id`). */
const namesCompanyRole = (name: string): boolean => name.toLowerCase().replaceAll('-', '_').replace(/^x_/, '') === COMPANY_ROLE_ID

/** The keywords under which a JSON Schema holds subschemas (examples and defaults are data, not schemas). */
const SUBSCHEMA_KEYWORDS = ['items', 'prefixItems', 'additionalProperties', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'contains']

/** Whether the schema declares a company role id property, at any depth (nested objects, arrays, unions). */
function declaresCompanyRole(schema: unknown, seen = new Set<unknown>()): boolean {
  if (typeof schema !== 'object' || schema === null || seen.has(schema)) return false
  seen.add(schema)
  if (Array.isArray(schema)) return schema.some((item) => declaresCompanyRole(item, seen))
  const { properties, patternProperties, dependentSchemas } = schema as Record<string, unknown>
  for (const named of [properties, dependentSchemas]) {
    if (typeof named !== 'object' || named === null) continue
    if (Object.keys(named).some(namesCompanyRole)) return true
    if (Object.values(named).some((property) => declaresCompanyRole(property, seen))) return true
  }
  if (typeof patternProperties === 'object' && patternProperties !== null) {
    if (Object.values(patternProperties).some((property) => declaresCompanyRole(property, seen))) return true
  }
  return SUBSCHEMA_KEYWORDS.some((keyword) => declaresCompanyRole((schema as Record<string, unknown>)[keyword], seen))
}

/** The path parameters of a Fastify URL (`:name`, with or without a regular expression). */
const pathParameters = (url: string): string[] => [...url.matchAll(/:(\w+)/g)].map((match) => match[1]!)

/**
 * Where a route can receive a company role id: a path parameter (Fastify's params come from the
 * URL alone), or a property its schema declares in the query string, body or headers. Input a schema does not declare is not looked for: the
 * handlers read only what their schema validated.
 */
function companyRolePlaces(route: RouteOptions): string[] {
  const schema = (route.schema ?? {}) as Record<string, unknown>
  const places = pathParameters(route.url).some(namesCompanyRole) ? ['path'] : []
  if (declaresCompanyRole(schema.querystring) || declaresCompanyRole(schema.query)) places.push('querystring')
  if (declaresCompanyRole(schema.body)) places.push('body')
  if (declaresCompanyRole(schema.headers)) places.push('headers')
  return places
}

/**
 * Why a route may not be served as declared: a company role id it can receive that no membership
 * check covers, or no declaration at all. Every method is checked, HEAD included (explicit, or
 * derived from a GET by Fastify's exposeHeadRoutes, which keeps the GET's config and hooks). The
 * membership check of a companyRoute reads `{company_role_id}` from the path alone, so it must be
 * there, and nowhere else.
 */
function undeclared(route: RouteOptions): string | undefined {
  const name = `${String(route.method)} ${route.url}`
  const tenancy = route.config?.tenancy
  const places = companyRolePlaces(route)
  if (tenancy?.kind === 'company') {
    const unchecked = places.filter((place) => place !== 'path')
    if (!places.includes('path')) {
      return `${name} is declared with companyRoute() but has no {company_role_id} in its path for the membership check to read${unchecked.length > 0 ? ` (it takes company_role_id in its ${unchecked.join(', ')})` : ''}`
    }
    if (unchecked.length > 0) {
      return `${name} takes a second company_role_id in its ${unchecked.join(', ')}, which the membership check (of the path's) does not cover`
    }
  } else if (places.length > 0) {
    return `${name} takes company_role_id in its ${places.join(', ')} but is not declared with companyRoute() and {company_role_id} in its path (src/tenancy/routes.ts)`
  }
  if (!tenancy && !route.config?.public) {
    return `${name} is neither public (config.public) nor declared with companyRoute() or userRoute() (src/tenancy/routes.ts)`
  }
  return undefined
}

async function admit(app: FastifyInstance, request: FastifyRequest, tenancy: TenancyDeclaration): Promise<void> {
  if (tenancy.kind === 'company') {
    const key = scopedPrincipalKey(request)
    if (!tenancy.statement) return void admitMember(request, await findUserWithMembership(app.db, key), tenancy.requirement)
    const { principal, data } = await tenancy.statement.run(app.db, key, request.params as object)
    admitMember(request, principal, tenancy.requirement)
    request.tenancyData = data
  } else {
    const key = principalKey(request)
    if (!tenancy.statement) return void admitUser(request, await findActiveUserForToken(app.db, key))
    const { user, data } = await tenancy.statement.run(app.db, key, request.params as object)
    admitUser(request, user)
    request.tenancyData = data
  }
}

/**
 * The tenancy pipeline, the one door of every authenticated route. After the JWT hook
 * (src/tokens/authentication.ts: the token's signature and claims, 401) and schema validation (400),
 * this preHandler admits the caller by the route's declaration (src/tenancy/routes.ts): a read runs
 * its one statement (principal, membership of `{company_role_id}` and the route's data); any other
 * route reads the principal, with the membership on a company route, in one query. 401 for an
 * inactive user or a revoked family, 404 for no active membership, 403 for the wrong kind of role
 * or a missing permission. At start, a route that could skip it is refused.
 */
export default fp(
  async function tenancyPlugin(app: FastifyInstance) {
    app.decorateRequest('auth', null)
    app.decorateRequest('companyRole', null)
    app.decorateRequest('tenancyData', undefined)

    app.addHook('preHandler', async (request: FastifyRequest) => {
      const tenancy = request.routeOptions.config.tenancy
      if (tenancy) await admit(app, request, tenancy)
    })

    const routes: RouteOptions[] = []
    const declared: DeclaredRoute[] = []
    app.decorate('tenancyRoutes', declared)

    // The net: an authenticated route's success that nobody admitted (or, on a company-scoped
    // route, whose member nobody admitted) is a bug and must not reach the client. onSend, not
    // preSerialization: a body sent as JSON text (route 9) skips serialisation and its hooks.
    app.addHook('onRoute', (route) => {
      const existing = route.onSend ?? []
      route.onSend = [...(Array.isArray(existing) ? existing : [existing]), assertAdmitted]
      routes.push(route)
      // HEAD routes are checked but not listed: the list feeds the tests' suites, which read bodies.
      if (route.method === 'HEAD') return
      const tenancy = route.config?.tenancy
      if (tenancy) declared.push({ method: String(route.method), url: route.url, tenancy, schema: route.schema })
    })

    // Checked once every route is in (the docs plugin marks its own public after this plugin's onRoute).
    app.addHook('onReady', async () => {
      const refusals = routes.map(undeclared).filter((reason) => reason !== undefined)
      if (refusals.length > 0) throw new Error(`refusing to start: ${refusals.join('; ')}`)
    })
  },
  { name: 'tenancy', dependencies: ['database', 'authentication'] },
)

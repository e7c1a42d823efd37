import type { FastifyInstance, FastifyRequest, FastifySchema, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import type { CompanyRoleContext } from './membership.js'
import { PresenceTracker } from './presence.js'
import type { AuthenticatedUser } from './principal.js'
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
  }
  interface FastifyInstance {
    /** Every authenticated route the app declared, in registration order: the tests' route list. */
    tenancyRoutes: readonly DeclaredRoute[]
    /** Marks company roles seen, after each admitted company request (src/tenancy/routes.ts). */
    presence: PresenceTracker
  }
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
    return `${name} is declared with none of companyRoute(), userRoute() or publicRoute() (src/tenancy/routes.ts)`
  }
  return undefined
}

/**
 * The tenancy pipeline's state and registry: the route constructs (src/tenancy/routes.ts) declare
 * each route's hooks; this plugin holds what they use (the admitted principal and member, the
 * presence tracker), lists the authenticated routes, and refuses to start with a route that could
 * skip them: one declared with none of the three constructs, or taking a company role id its
 * membership check does not read.
 */
export default fp(
  async function tenancyPlugin(app: FastifyInstance) {
    app.decorateRequest('auth', null)
    app.decorateRequest('companyRole', null)
    app.decorate('presence', new PresenceTracker(app.db))
    // A presence write under way finishes before the database closes.
    app.addHook('onClose', async () => app.presence.settled())

    const routes: RouteOptions[] = []
    const declared: DeclaredRoute[] = []
    app.decorate('tenancyRoutes', declared)

    app.addHook('onRoute', (route) => {
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
  { name: 'tenancy', dependencies: ['database', 'authentication', 'metrics'] },
)

import type { FastifyPluginAsync } from 'fastify'
import type { DeclaredRoute } from '../../src/tenancy/plugin.js'
import { EXAMPLES_KEYWORD } from '../../schemas/responses.js'
import { buildTestApp, DEMO } from './app.js'

/**
 * The app's own list of authenticated routes (src/tenancy/plugin.ts's registry), for the suites
 * that must cover every one of them: a route added to the app is in it without editing a test.
 * Read from an app built for the purpose, since a suite names its tests before its app exists.
 */
export async function declaredRoutes(extraRoutes?: FastifyPluginAsync): Promise<DeclaredRoute[]> {
  const app = await buildTestApp({}, { extraRoutes })
  try {
    return [...app.tenancyRoutes]
  } finally {
    await app.close()
  }
}

/** The OpenAPI form of a route (`GET /api/…/{company_role_id}/…`). */
export const operationOf = (route: DeclaredRoute): string =>
  `${route.method} ${route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/(.)\/$/, '$1')}`

/** The numbers the contract gives the routes, for readable test names; a new route is named by its operation. */
const ROUTE_NAMES: Record<string, string> = {
  'GET /api/company/v1/get-user-companies': 'route 4',
  'POST /api/company/{version}/{company_role_id}/document-solicitation/{seller_id}': 'route 5',
  'GET /api/company/v1/{company_role_id}/chat/partners/{partner_company_role_id}/presence': 'route 6',
  'GET /api/company/v1/{company_role_id}/buyer/check-documents/{seller_id}': 'route 7',
  'DELETE /api/company/v1/{company_role_id}/bank-account/{bank_account_id}': 'route 8',
  'GET /api/v1/marketplace/{company_role_id}/title/{title_id}/documents': 'route 9',
  'POST /api/company/v1/{company_role_id}/customers/{id}': 'route 11',
}

export const routeName = (route: DeclaredRoute): string => ROUTE_NAMES[operationOf(route)] ?? operationOf(route)

interface Annotated {
  properties?: Record<string, { examples?: unknown[]; format?: string }>
  [EXAMPLES_KEYWORD]?: Record<string, { value: unknown }>
}

/** The route's path parameters as their schema's examples show them (a UUID of no row where none is given). */
export function exampleParams(route: DeclaredRoute): Record<string, string> {
  const properties = (route.schema?.params as Annotated | undefined)?.properties ?? {}
  return Object.fromEntries(
    Object.entries(properties).map(([name, schema]) => [name, String(schema.examples?.[0] ?? '7f000000-0000-4000-8000-000000000001')]),
  )
}

/** The route's path with `params` put in. */
export const pathOf = (route: DeclaredRoute, params: Record<string, string>): string =>
  route.url.replace(/:([A-Za-z0-9_]+)/g, (_match, name: string) => encodeURIComponent(params[name] ?? ''))

/** The first example of the route's body schema, or undefined for a route without a body. */
export function exampleBody(route: DeclaredRoute): unknown {
  const body = route.schema?.body as Annotated | undefined
  if (!body) return undefined
  return Object.values(body[EXAMPLES_KEYWORD] ?? {})[0]?.value ?? {}
}

const { roles, users } = DEMO

/** A demo user with every permission of a role, for routes whose example role is theirs. */
export const MEMBERS: Record<string, { email: string; userId: string; roleId: string }> = {
  [roles.acmeSeller]: { email: 'alice@acme.example', userId: users.alice, roleId: roles.acmeSeller },
  [roles.betaBuyer]: { email: 'bob@beta.example', userId: users.bob, roleId: roles.betaBuyer },
}

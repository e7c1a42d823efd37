import { Type, type TSchema } from '@sinclair/typebox'
import type { FastifyInstance, FastifyPluginAsync, FastifySchema } from 'fastify'
import { describe, expect, it } from 'vitest'
import { Uuid } from '../../schemas/common.js'
import { BEARER_PROBLEMS, emptyResponse, Problems, routeResponses, when } from '../../schemas/responses.js'
import { companyRoute, userRoute } from '../../src/tenancy/routes.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, useTestApp } from '../helpers/app.js'

/*
 * The start-up check of src/tenancy/plugin.ts: a route that can receive a company role id – in its
 * path, query string, body or headers, on any method, HEAD included – is a companyRoute whose
 * membership check reads that id from the path, or the app refuses to start naming it.
 */

const { roles } = DEMO
const params = Type.Object({ company_role_id: Uuid })
const roleId = Type.Object({ company_role_id: Uuid })
const leaked = async () => ({ secret: 'leaked' })

/** Builds the app with `routes`; the promise of its refusal to start. */
async function refusal(routes: FastifyPluginAsync): Promise<string> {
  try {
    const app = await buildTestApp({}, { extraRoutes: routes })
    await app.close()
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('the app started')
}

describe('routes that can receive a company role id outside companyRoute() stop the start, naming the route and where', () => {
  const forms: [string, RegExp, FastifyPluginAsync][] = [
    [
      'an explicit HEAD route on {company_role_id}',
      /HEAD \/throwaway\/head\/:company_role_id\b.*path/,
      async (app) => void app.head('/throwaway/head/:company_role_id', { schema: { params } }, async () => undefined),
    ],
    [
      'an explicit HEAD route without a schema',
      /HEAD \/throwaway\/bare-head\/:company_role_id\b.*path/,
      async (app) => void app.head('/throwaway/bare-head/:company_role_id', async () => undefined),
    ],
    [
      'a userRoute with company_role_id in its query string',
      /GET \/throwaway\/by-query\b.*querystring/,
      async (app) => void app.route(userRoute({ method: 'GET', url: '/throwaway/by-query', schema: { querystring: roleId }, handler: leaked })),
    ],
    [
      'a userRoute with company_role_id in its body',
      /POST \/throwaway\/by-body\b.*body/,
      async (app) => void app.route(userRoute({ method: 'POST', url: '/throwaway/by-body', schema: { body: roleId }, handler: leaked })),
    ],
    [
      'a userRoute with company_role_id deep in its body',
      /PUT \/throwaway\/by-nested-body\b.*body/,
      async (app) =>
        void app.route(
          userRoute({
            method: 'PUT',
            url: '/throwaway/by-nested-body',
            schema: { body: Type.Object({ filters: Type.Array(Type.Union([Type.Null(), roleId])) }) },
            handler: leaked,
          }),
        ),
    ],
    [
      'a userRoute with a Company-Role-Id header',
      /GET \/throwaway\/by-header\b.*headers/,
      async (app) =>
        void app.route(
          userRoute({
            method: 'GET',
            url: '/throwaway/by-header',
            schema: { headers: Type.Object({ 'Company-Role-Id': Uuid }) },
            handler: leaked,
          }),
        ),
    ],
    [
      'a public route with company_role_id in its query string (the `query` spelling)',
      /DELETE \/throwaway\/public-query\b.*querystring/,
      // Fastify takes `query` for `querystring`; its type does not say so.
      async (app) => void app.delete('/throwaway/public-query', { schema: { query: roleId } as FastifySchema, config: { public: true } }, leaked),
    ],
    [
      'a companyRoute that takes a second company role id in its body',
      /PATCH \/throwaway\/second-role\/:company_role_id\b.*body/,
      async (app) =>
        void app.route(
          companyRoute({
            method: 'PATCH',
            url: '/throwaway/second-role/:company_role_id',
            permission: 'chat',
            schema: { params, body: roleId },
            handler: leaked,
          }),
        ),
    ],
    [
      'a companyRoute whose path has no {company_role_id} for its check to read',
      /GET \/throwaway\/no-path-role\b.*querystring/,
      async (app) =>
        void app.route(
          companyRoute({ method: 'GET', url: '/throwaway/no-path-role', permission: 'chat', schema: { querystring: roleId }, handler: leaked }),
        ),
    ],
  ]

  for (const [name, expected, routes] of forms) {
    it(name, async () => {
      const message = await refusal(routes)
      expect(message).toMatch(/^refusing to start/)
      expect(message).toMatch(expected)
    })
  }

  it('names every offending route at once', async () => {
    const message = await refusal(async (app) => {
      app.head('/throwaway/one/:company_role_id', async () => undefined)
      app.route(userRoute({ method: 'GET', url: '/throwaway/two', schema: { querystring: roleId }, handler: leaked }))
    })
    expect(message).toContain('HEAD /throwaway/one/:company_role_id')
    expect(message).toContain('GET /throwaway/two')
  })

  it('a partner_company_role_id (route 6) or a company_role_id in a response is no company role id to act for', async () => {
    const app = await buildTestApp(
      {},
      {
        extraRoutes: async (app) =>
          void app.route(
            userRoute({
              method: 'GET',
              url: '/throwaway/partner/:partner_company_role_id',
              schema: {
                params: Type.Object({ partner_company_role_id: Uuid }),
                response: routeResponses({ 204: emptyResponse('Nothing') }, BEARER_PROBLEMS),
              },
              handler: async () => undefined,
            }),
          ),
      },
    )
    await app.close()
  })
})

describe('HEAD on a company route runs the membership check before its handler', () => {
  let ran = 0
  const responses = (success: TSchema) =>
    routeResponses({ 200: { description: 'The probe', content: { 'application/json': { schema: success } } } }, [
      ...BEARER_PROBLEMS,
      when(Problems.notFound, 'Not a member of `company_role_id`'),
    ])
  const probe = (method: 'GET' | 'HEAD', url: string) =>
    companyRoute({
      method,
      url,
      permission: 'chat',
      schema: { params, response: responses(Type.Object({ ran: Type.Integer() })) },
      handler: async () => ({ ran: ++ran }),
    })
  const ctx = useTestApp(
    {},
    {
      extraRoutes: async (app: FastifyInstance) => {
        // Explicit HEAD first: a GET after it derives no HEAD of its own.
        app.route(probe('HEAD', '/throwaway/explicit-head/:company_role_id'))
        app.route(probe('GET', '/throwaway/explicit-head/:company_role_id'))
        // Only a GET: Fastify derives its HEAD (exposeHeadRoutes).
        app.route(probe('GET', '/throwaway/derived-head/:company_role_id'))
      },
    },
  )

  for (const route of ['explicit-head', 'derived-head']) {
    it(`${route}: a non-member gets 404 and the handler never runs; a member gets 200`, async () => {
      const { access } = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
      ran = 0
      const head = (role: string) => ctx.app.inject({ method: 'HEAD', url: `/throwaway/${route}/${role}`, headers: bearer(access) })
      expect((await ctx.app.inject({ method: 'HEAD', url: `/throwaway/${route}/${roles.betaBuyer}` })).statusCode).toBe(401)
      expect((await head(roles.betaBuyer)).statusCode).toBe(404)
      expect(ran).toBe(0)
      const member = await head(roles.acmeSeller)
      expect(member.statusCode).toBe(200)
      expect(member.body).toBe('')
      expect(ran).toBe(1)
    })
  }
})

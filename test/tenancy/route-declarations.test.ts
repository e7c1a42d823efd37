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
  const notCompanyRoute = (route: string, places: string) =>
    `${route} takes company_role_id in its ${places} but is not declared with companyRoute() and {company_role_id} in its path (src/tenancy/routes.ts)`
  const noPathRole = (route: string, places?: string) =>
    `${route} is declared with companyRoute() but has no {company_role_id} in its path for the membership check to read${places ? ` (it takes company_role_id in its ${places})` : ''}`
  /** A GET's reason, and its HEAD's (Fastify derives one from each GET, with its config and hooks). */
  const withHead = (reason: (method: string) => string) => `${reason('GET')}; ${reason('HEAD')}`

  const forms: [string, string, FastifyPluginAsync][] = [
    [
      'an explicit HEAD route on {company_role_id}',
      notCompanyRoute('HEAD /throwaway/head/:company_role_id', 'path'),
      async (app) => void app.head('/throwaway/head/:company_role_id', { schema: { params } }, async () => undefined),
    ],
    [
      'an explicit HEAD route without a schema',
      notCompanyRoute('HEAD /throwaway/bare-head/:company_role_id', 'path'),
      async (app) => void app.head('/throwaway/bare-head/:company_role_id', async () => undefined),
    ],
    [
      'a userRoute with company_role_id in its query string',
      withHead((method) => notCompanyRoute(`${method} /throwaway/by-query`, 'querystring')),
      async (app) => void app.route(userRoute({ method: 'GET', url: '/throwaway/by-query', schema: { querystring: roleId }, handler: leaked })),
    ],
    [
      'a userRoute with company_role_id in its body',
      notCompanyRoute('POST /throwaway/by-body', 'body'),
      async (app) => void app.route(userRoute({ method: 'POST', url: '/throwaway/by-body', schema: { body: roleId }, handler: leaked })),
    ],
    [
      'a userRoute with company_role_id in its query string and its body',
      notCompanyRoute('POST /throwaway/by-query-and-body', 'querystring, body'),
      async (app) =>
        void app.route(
          userRoute({ method: 'POST', url: '/throwaway/by-query-and-body', schema: { querystring: roleId, body: roleId }, handler: leaked }),
        ),
    ],
    [
      'a userRoute with company_role_id deep in its body',
      notCompanyRoute('PUT /throwaway/by-nested-body', 'body'),
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
      withHead((method) => notCompanyRoute(`${method} /throwaway/by-header`, 'headers')),
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
      notCompanyRoute('DELETE /throwaway/public-query', 'querystring'),
      // Fastify takes `query` for `querystring`; its type does not say so.
      async (app) => void app.delete('/throwaway/public-query', { schema: { query: roleId } as FastifySchema, config: { public: true } }, leaked),
    ],
    [
      'a companyRoute that takes a second company role id in its body',
      "PATCH /throwaway/second-role/:company_role_id takes a second company_role_id in its body, which the membership check (of the path's) does not cover",
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
      'a companyRoute that takes second company role ids in its query string and its body',
      "PUT /throwaway/second-roles/:company_role_id takes a second company_role_id in its querystring, body, which the membership check (of the path's) does not cover",
      async (app) =>
        void app.route(
          companyRoute({
            method: 'PUT',
            url: '/throwaway/second-roles/:company_role_id',
            permission: 'chat',
            schema: { params, querystring: roleId, body: roleId },
            handler: leaked,
          }),
        ),
    ],
    [
      'a companyRoute whose path has no {company_role_id} for its check to read',
      withHead((method) => noPathRole(`${method} /throwaway/no-path-role`, 'querystring')),
      async (app) =>
        void app.route(
          companyRoute({ method: 'GET', url: '/throwaway/no-path-role', permission: 'chat', schema: { querystring: roleId }, handler: leaked }),
        ),
    ],
    [
      'a companyRoute that takes its company role id in its query string and its body, none in its path',
      noPathRole('POST /throwaway/no-path-roles', 'querystring, body'),
      async (app) =>
        void app.route(
          companyRoute({
            method: 'POST',
            url: '/throwaway/no-path-roles',
            permission: 'chat',
            schema: { querystring: roleId, body: roleId },
            handler: leaked,
          }),
        ),
    ],
    [
      'a companyRoute with no company role id anywhere',
      withHead((method) => noPathRole(`${method} /throwaway/no-role`)),
      async (app) => void app.route(companyRoute({ method: 'GET', url: '/throwaway/no-role', permission: 'chat', schema: {}, handler: leaked })),
    ],
  ]

  for (const [name, reasons, routes] of forms) {
    it(name, async () => {
      expect(await refusal(routes)).toBe(`refusing to start: ${reasons}`)
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

describe("a route's own hooks, one or a list, run in the construct's order", () => {
  const calls: string[] = []
  const record = (name: string) => async () => void calls.push(name)
  const ctx = useTestApp(
    {},
    {
      extraRoutes: async (app: FastifyInstance) => {
        app.route(
          companyRoute({
            method: 'GET',
            url: '/throwaway/own-hooks/:company_role_id',
            permission: 'chat',
            schema: {
              params,
              response: routeResponses(
                { 200: { description: 'Hooks ran', content: { 'application/json': { schema: Type.Object({ ok: Type.Boolean() }) } } } },
                [...BEARER_PROBLEMS, when(Problems.notFound, 'Not a member of `company_role_id`')],
              ),
            },
            // One hook alone, and lists: Fastify takes either.
            onRequest: record('onRequest'),
            preHandler: [record('preHandler')],
            onSend: record('onSend'),
            onResponse: [record('onResponse')],
            handler: async () => {
              calls.push('handler')
              return { ok: true }
            },
          }),
        )
      },
    },
  )

  it("after the bearer token and the admission, before the handler; the answer's hooks alone for a request refused first", async () => {
    const { access } = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    calls.length = 0
    expect((await ctx.app.inject({ method: 'GET', url: `/throwaway/own-hooks/${roles.acmeSeller}` })).statusCode).toBe(401)
    expect(calls).toEqual(['onSend', 'onResponse'])
    calls.length = 0
    const member = await ctx.app.inject({ method: 'GET', url: `/throwaway/own-hooks/${roles.acmeSeller}`, headers: bearer(access) })
    expect(member.statusCode, member.body).toBe(200)
    expect(calls).toEqual(['onRequest', 'preHandler', 'handler', 'onSend', 'onResponse'])
    calls.length = 0
    const stranger = await ctx.app.inject({ method: 'GET', url: `/throwaway/own-hooks/${roles.betaBuyer}`, headers: bearer(access) })
    expect(stranger.statusCode).toBe(404)
    // Refused in admission: its own onRequest ran before it, its own preHandler and handler never.
    expect(calls).toEqual(['onRequest', 'onSend', 'onResponse'])
  })
})

describe('a keyed route must declare its Idempotency-Key header, or the app does not start', () => {
  it('names the route and where the header is declared', async () => {
    const message = await refusal(
      async (app) =>
        void app.route(
          companyRoute({
            method: 'POST',
            url: '/throwaway/keyed/:company_role_id',
            permission: 'chat',
            schema: { params },
            config: { idempotency: true },
            handler: leaked,
          }),
        ),
    )
    expect(message).toBe(
      '/throwaway/keyed/:company_role_id: an idempotency route must declare the idempotency-key header in its schema (schemas/idempotency.ts)',
    )
  })
})

import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { jsonResponse, Problems, routeResponses } from '../../schemas/responses.js'
import type { Deprecation } from '../../src/plugins/deprecation.js'
import { publicRoute } from '../../src/tenancy/routes.js'
import { buildTestApp } from '../helpers/app.js'

/** docs/versioning.md's deprecation, on throwaway routes of the test app: the headers, then 410 gone after the sunset. */

const REPLACEMENT = 'https://api.platform.example/docs#/auth/obtainTokenPair'
const DAY = 86_400_000

function deprecatedRoute(url: string, deprecation: Deprecation): FastifyPluginAsync {
  return async (app) => {
    app.route(
      publicRoute({
        method: 'GET',
        url,
        config: { deprecation },
        schema: {
          operationId: `old${url.replace(/\W/g, '')}`,
          tags: ['platform'],
          summary: "A deprecated operation (a test's)",
          deprecated: true,
          response: routeResponses({ 200: jsonResponse('Still answering', Type.Object({ ok: Type.Boolean() }), {}) }, [Problems.gone]),
        },
        handler: async () => ({ ok: true }),
      }),
    )
  }
}

const deprecatedAt = new Date(Math.floor((Date.now() - 30 * DAY) / 1000) * 1000)
const routes: FastifyPluginAsync = async (app) => {
  await app.register(
    deprecatedRoute('/api/test/v1/deprecated', { deprecatedAt, sunsetAt: new Date(Date.now() + 180 * DAY), replacement: REPLACEMENT }),
  )
  await app.register(deprecatedRoute('/api/test/v1/sunset', { deprecatedAt, sunsetAt: new Date(Date.now() - DAY), replacement: REPLACEMENT }))
}

let app: Awaited<ReturnType<typeof buildTestApp>>
beforeAll(async () => {
  app = await buildTestApp({}, { extraRoutes: routes })
})
afterAll(async () => {
  await app?.close()
})

describe('a deprecated operation (docs/versioning.md, "Deprecation")', () => {
  it('answers with Deprecation (RFC 9745), Sunset (RFC 8594) and Link to its replacement, and the document marks it deprecated', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/test/v1/deprecated' })
    expect(response.statusCode).toBe(200)
    expect(response.headers.deprecation).toBe(`@${deprecatedAt.getTime() / 1000}`)
    expect(response.headers.sunset).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/)
    expect(response.headers.link).toBe(`<${REPLACEMENT}>; rel="deprecation"; type="text/html"`)
    const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json<{
      paths: Record<string, { get: { deprecated?: boolean; responses: object } }>
    }>()
    expect(document.paths['/api/test/v1/deprecated']?.get.deprecated).toBe(true)
    expect(Object.keys(document.paths['/api/test/v1/deprecated']?.get.responses ?? {})).toContain('410')
  })

  it('answers 410 gone after its sunset date, with the same headers', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/test/v1/sunset' })
    expect(response.statusCode).toBe(410)
    expect(response.json()).toMatchObject({ code: 'gone', status: 410 })
    expect(response.headers.sunset).toBe(new Date(Date.parse(String(response.headers.sunset))).toUTCString())
    expect(response.headers.link).toContain('rel="deprecation"')
  })

  it('refuses to start with a deprecated route whose schema does not say so', async () => {
    const undeclared: FastifyPluginAsync = async (instance) => {
      instance.route(
        publicRoute({
          method: 'GET',
          url: '/api/test/v1/undeclared',
          config: { deprecation: { deprecatedAt, sunsetAt: new Date(), replacement: REPLACEMENT } },
          schema: { response: { 200: jsonResponse('x', Type.Object({}), {}) } },
          handler: async () => ({}),
        }),
      )
    }
    await expect(buildTestApp({}, { extraRoutes: undeclared })).rejects.toThrow(/deprecated: true and Problems.gone/)
  })
})

import type { FastifyInstance, FastifyRequest } from 'fastify'
import { describe, expect, it } from 'vitest'
import { sendJsonText } from '../../src/lib/json-text.js'
import { userRoute } from '../../src/tenancy/routes.js'
import { testDatabase } from '../helpers/database.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { declaredRoutes, exampleParams, MEMBERS, pathOf, routeName } from '../helpers/declared-routes.js'
import { decodeClaims } from '../helpers/jwt.js'

const ctx = useTestApp()

/**
 * The reads that check the token's user and membership in their own statement: every GET the app
 * declares with a `read` (src/tenancy/routes.ts), called with its schema's examples by the member
 * of the example's role (alice for route 4). A write's read (route 5) is the order-of-checks suite's.
 */
const GETS = (await declaredRoutes()).filter((route) => route.method === 'GET')
const READS = GETS.filter((route) => route.tenancy.statement !== undefined).map((route) => {
  const params = exampleParams(route)
  const member = MEMBERS[params.company_role_id ?? DEMO.roles.acmeSeller]!
  return { name: routeName(route), email: member.email, userId: member.userId, url: pathOf(route, params) }
})

const get = (url: string, access: string) => ctx.app.inject({ method: 'GET', url, headers: bearer(access) })

describe('reads that check the principal in their own statement', () => {
  it('every GET of the app is one: it declares its read, and the app has the four reads of the contract', () => {
    expect(GETS.filter((route) => route.tenancy.statement === undefined).map(routeName)).toEqual([])
    expect(READS.map((read) => read.name).sort()).toEqual(expect.arrayContaining(['route 4', 'route 6', 'route 7', 'route 9']))
  })

  for (const read of READS) {
    it(`${read.name}: answers 200, then 401 once the token's family is revoked or the user disabled`, async () => {
      const { db } = await testDatabase()
      const first = await obtainTokens(ctx.app, read.email, DEMO_PASSWORD)
      const second = await obtainTokens(ctx.app, read.email, DEMO_PASSWORD)
      expect((await get(read.url, first.access)).statusCode).toBe(200)

      const family = String(decodeClaims(first.access).fid)
      await db.updateTable('token_families').set({ revoked_at: new Date(), revoked_reason: 'logout' }).where('id', '=', family).execute()
      problemOf(await get(read.url, first.access), 401, 'token_not_valid')
      expect((await get(read.url, second.access)).statusCode).toBe(200)

      await db.updateTable('users').set({ is_active: false }).where('id', '=', read.userId).execute()
      problemOf(await get(read.url, second.access), 401, 'token_not_valid')
    })
  }

  for (const read of READS.filter((candidate) => candidate.name !== 'route 4')) {
    it(`${read.name}: answers 404 once the membership is deactivated`, async () => {
      const { db } = await testDatabase()
      const { access } = await obtainTokens(ctx.app, read.email, DEMO_PASSWORD)
      await db.updateTable('memberships').set({ is_active: false }).where('user_id', '=', read.userId).execute()
      problemOf(await get(read.url, access), 404, 'not_found')
    })
  }

  it('refuses to answer a success that no handler admitted (a 500, and no body leaks)', async () => {
    // Only the pipeline admits (a route that could skip it is refused at start): these handlers undo
    // the admission, as a bug in the pipeline would leave it, and the net must still stop the answer.
    const unadmit = (request: FastifyRequest) => void (request.auth = null)
    const forgetful = async (app: FastifyInstance) => {
      app.route(
        userRoute({ method: 'GET', url: '/forgot-to-admit', schema: {}, handler: async (request) => (unadmit(request), { secret: 'leaked' }) }),
      )
      // A body already serialised (as route 9 sends the database's JSON) skips serialisation and its hooks.
      app.route(
        userRoute({
          method: 'GET',
          url: '/forgot-to-admit-json-text',
          schema: {},
          handler: async (request, reply) => (unadmit(request), sendJsonText(reply, '{"secret":"leaked"}')),
        }),
      )
    }
    const app = await buildTestApp({}, { conformance: false, extraRoutes: forgetful })
    try {
      const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      for (const url of ['/forgot-to-admit', '/forgot-to-admit-json-text']) {
        const response = await app.inject({ method: 'GET', url, headers: bearer(access) })
        problemOf(response, 500, 'server_error')
        expect(response.body).not.toContain('leaked')
      }
    } finally {
      await app.close()
    }
  })
})

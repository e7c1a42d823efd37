import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import type { LogDestination } from '../../src/logging.js'
import { companyRoute, userRoute } from '../../src/tenancy/routes.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf } from '../helpers/app.js'
import { describeOrderOfChecks } from './order-of-checks.js'

await describeOrderOfChecks()

const { roles } = DEMO

describe('the safety net of the tenancy pipeline', () => {
  const params = Type.Object({ company_role_id: Type.String({ format: 'uuid' }) })

  // Throwaway routes the OpenAPI document cannot describe: no conformance check.
  const appWith = (routes: (app: FastifyInstance) => void, logDestination?: LogDestination): Promise<FastifyInstance> =>
    buildTestApp(
      { LOG_LEVEL: 'error' },
      { conformance: false, extraRoutes: async (app) => routes(app), ...(logDestination ? { logDestination } : {}) },
    )

  it('a route on {company_role_id} not declared with companyRoute(), or an authenticated route with no declaration, stops the app naming it', async () => {
    // The forms that once served data with the member unchecked: the route's own statement, a user-only admission, nothing.
    const forms: [string, (app: FastifyInstance) => void][] = [
      [
        'GET /throwaway/in-statement/:company_role_id',
        (app) => app.get('/throwaway/in-statement/:company_role_id', { schema: { params } }, async () => ({ secret: 'leaked' })),
      ],
      [
        'GET /throwaway/user-only/:company_role_id',
        (app) =>
          app.route(
            userRoute({
              method: 'GET',
              url: '/throwaway/user-only/:company_role_id',
              schema: { params },
              handler: async () => ({ secret: 'leaked' }),
            }),
          ),
      ],
      [
        'GET /throwaway/public/:company_role_id',
        (app) => app.get('/throwaway/public/:company_role_id', { schema: { params }, config: { public: true } }, async () => ({ secret: 'leaked' })),
      ],
      ['GET /throwaway/undeclared', (app) => app.get('/throwaway/undeclared', async () => ({ secret: 'leaked' }))],
    ]
    for (const [name, register] of forms) await expect(appWith(register)).rejects.toThrow(name)
  })

  it('a route whose principal or member is not admitted answers 500 (logged), or 404 to a non-member, never data', async () => {
    const lines: string[] = []
    const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }
    const app = await appWith((app) => {
      // Only the pipeline admits: this handler undoes it, as a bug in the pipeline would leave it; the net must stop the success.
      app.route(
        companyRoute({
          method: 'GET',
          url: '/throwaway/in-statement/:company_role_id',
          permission: 'chat',
          schema: { params },
          read: (db, scope) => db.selectFrom('company_roles').select('id').where('id', '=', scope.companyRoleId),
          handler: async (request) => {
            request.companyRole = null
            return { secret: 'leaked' }
          },
        }),
      )
      // A user route whose principal is undone in its handler: the net stops that success too.
      app.route(
        userRoute({
          method: 'GET',
          url: '/throwaway/unadmitted-user',
          schema: {},
          handler: async (request) => {
            request.auth = null
            return { secret: 'leaked' }
          },
        }),
      )
      // Serves data without looking: a non-member still gets 404.
      app.route(
        companyRoute({
          method: 'GET',
          url: '/throwaway/piped/:company_role_id',
          permission: 'chat',
          schema: { params },
          handler: async () => ({ secret: 'leaked' }),
        }),
      )
    }, logDestination)
    try {
      const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      const response = await app.inject({ method: 'GET', url: `/throwaway/in-statement/${roles.acmeSeller}`, headers: bearer(access) })
      problemOf(response, 500, 'server_error')
      expect(response.body).not.toContain('leaked')
      expect(lines.some((line) => line.includes('a company-scoped route answered without admitting the member'))).toBe(true)
      const user = await app.inject({ method: 'GET', url: '/throwaway/unadmitted-user', headers: bearer(access) })
      problemOf(user, 500, 'server_error')
      expect(user.body).not.toContain('leaked')
      expect(lines.some((line) => line.includes('a route answered without admitting the principal'))).toBe(true)
      for (const route of ['in-statement', 'piped']) {
        const refused = await app.inject({ method: 'GET', url: `/throwaway/${route}/${roles.betaBuyer}`, headers: bearer(access) })
        problemOf(refused, 404, 'not_found')
        expect(refused.body).not.toContain('leaked')
      }
    } finally {
      await app.close()
    }
  })
})

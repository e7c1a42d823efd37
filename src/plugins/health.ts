import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sql } from 'kysely'
import { livenessRouteSchema, readinessRouteSchema } from '../../schemas/health.js'
import { problem } from '../lib/problem.js'

/** Liveness (the process answers) and readiness (the database answers), both public. */
const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/live', { schema: livenessRouteSchema, config: { public: true }, logLevel: 'warn' }, async () => ({
    status: 'ok' as const,
  }))
  app.get(
    '/ready',
    { schema: readinessRouteSchema, config: { public: true }, logLevel: 'warn' },
    async () => {
      try {
        await sql`SELECT 1`.execute(app.db)
      } catch {
        throw problem(503, 'service_unavailable', 'The database is not reachable.', { headers: { 'retry-after': '5' } })
      }
      return { status: 'ok' as const }
    },
  )
}

export default healthRoutes

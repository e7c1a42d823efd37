import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { livenessRouteSchema, readinessRouteSchema } from '../../schemas/health.js'
import { DatabaseConfigurationError, isDatabaseReadOnly } from '../db/errors.js'
import { problem } from '../lib/problem.js'
import { publicRoute } from '../tenancy/routes.js'

/** Readiness answers within this, whatever the database does: probes have short timeouts of their own. */
const READINESS_TIMEOUT_MS = 1_000

/**
 * Liveness (the process answers) and readiness (the database answers and takes writes, and the
 * instance is not draining), both public. A database that refuses writes (a failover under way)
 * makes the instance unready: its writes would all be 503.
 */
const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.route(
    publicRoute({ method: 'GET', url: '/live', schema: livenessRouteSchema, logLevel: 'warn', handler: async () => ({ status: 'ok' as const }) }),
  )
  app.route(
    publicRoute({
      method: 'GET',
      url: '/ready',
      schema: readinessRouteSchema,
      logLevel: 'warn',
      handler: async () => {
        if (app.draining) {
          throw problem(503, 'service_unavailable', 'This instance is shutting down.', { headers: { 'retry-after': '5' } })
        }
        // A saturated instance (src/fairness/shedder.ts): the gateway sends elsewhere until it recovers.
        if (app.loadShedder?.shedding)
          throw problem(503, 'service_unavailable', 'This instance is saturated and sheds load.', { headers: { 'retry-after': '2' } })
        try {
          await app.probeDatabase(READINESS_TIMEOUT_MS)
        } catch (error) {
          const detail =
            error instanceof DatabaseConfigurationError
              ? `The database is set up in a way the service cannot use: ${app.databaseProblems.join('; ')}`
              : isDatabaseReadOnly(error)
                ? 'The database refuses writes (read-only, or in recovery).'
                : 'The database is not reachable.'
          throw problem(503, 'service_unavailable', detail, { headers: { 'retry-after': '5' } })
        }
        const problems = app.databaseProblems
        return problems.length > 0 ? { status: 'ok' as const, configuration_errors: [...problems] } : { status: 'ok' as const }
      },
    }),
  )
}

export default healthRoutes

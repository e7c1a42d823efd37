import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { Errors } from '../../schemas/common.js'
import { problem } from '../lib/problem.js'

const Status = Type.Object({ status: Type.Literal('ok') })

/** Liveness (the process answers) and readiness (the database answers), both public. */
const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/live', { schema: { tags: ['health'], response: { 200: Status } }, config: { public: true }, logLevel: 'warn' }, async () => ({
    status: 'ok' as const,
  }))
  app.get(
    '/ready',
    { schema: { tags: ['health'], response: { 200: Status, 503: Errors[503] } }, config: { public: true }, logLevel: 'warn' },
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

import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { PresenceTracker } from './presence.js'

declare module 'fastify' {
  interface FastifyInstance {
    presence: PresenceTracker
  }
}

/**
 * Chat presence (§4 route 6): every request the tenancy pipeline admitted for a company role marks
 * that role seen, whatever the route. A side write: after the answer is sent (onResponse), bounded
 * (src/company/chat/presence.ts), and a failure only logged and counted, so that a slow or locked
 * presence table never changes an answer nor holds its connection (docs/decisions.md). Attached to
 * the company-scoped routes only, so that the others pay no hook for it.
 */
export default fp(
  async function presencePlugin(app: FastifyInstance) {
    app.decorate('presence', new PresenceTracker(app.db))
    const markSeen = async (request: FastifyRequest) => {
      if (!request.companyRole) return
      try {
        await app.presence.markSeen(request.companyRole.companyRoleId)
      } catch (error) {
        request.log.warn({ err: error }, 'presence: the role could not be marked seen')
        app.metrics.sideWriteFailures.labels('presence').inc()
      }
    }
    // A write under way finishes before the database closes.
    app.addHook('onClose', async () => app.presence.settled())
    app.addHook('onRoute', (route) => {
      if (route.config?.tenancy?.kind !== 'company') return
      const existing = route.onResponse ?? []
      route.onResponse = [...(Array.isArray(existing) ? existing : [existing]), markSeen]
    })
  },
  { name: 'presence', dependencies: ['database', 'tenancy', 'metrics'] },
)

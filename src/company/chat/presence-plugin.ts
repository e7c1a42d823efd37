import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { PresenceTracker } from './presence.js'

declare module 'fastify' {
  interface FastifyInstance {
    presence: PresenceTracker
  }
}

/**
 * Chat presence (§4 route 6): every request the tenancy pipeline admitted for a company role marks
 * that role seen, whatever the route. onSend, so the write is done when the client has its answer
 * (a partner asking right after sees it); attached to the company-scoped routes only, so that the
 * others pay no hook for it. A failed write is logged and changes no answer: a success already
 * committed must not turn into a 503 that invites a retry, nor an error answer into another.
 */
export default fp(
  async function presencePlugin(app: FastifyInstance) {
    app.decorate('presence', new PresenceTracker(app.db))
    const markSeen = async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
      if (!request.companyRole) return payload
      try {
        await app.presence.markSeen(request.companyRole.companyRoleId)
      } catch (error) {
        request.log.warn({ err: error }, 'presence: the role could not be marked seen')
      }
      return payload
    }
    app.addHook('onRoute', (route) => {
      if (route.config?.tenancy?.kind !== 'company') return
      const existing = route.onSend ?? []
      route.onSend = [...(Array.isArray(existing) ? existing : [existing]), markSeen]
    })
  },
  { name: 'presence', dependencies: ['database', 'tenancy'] },
)

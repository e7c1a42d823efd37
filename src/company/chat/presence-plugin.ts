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
 * (a partner asking right after sees it).
 */
export default fp(
  async function presencePlugin(app: FastifyInstance) {
    app.decorate('presence', new PresenceTracker(app.db))
    app.addHook('onSend', async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
      if (request.companyRole) await app.presence.markSeen(request.companyRole.companyRoleId)
      return payload
    })
  },
  { name: 'presence', dependencies: ['database', 'tenancy'] },
)

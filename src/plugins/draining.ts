import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { sendProblem } from './errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** True from `startDraining()` (SIGTERM) on: readiness answers 503, answers close their connection. */
    readonly draining: boolean
    startDraining(): void
  }
}

/**
 * Shutdown in two steps (src/server.ts):
 * - draining (SIGTERM, for DRAIN_DELAY): requests are served as usual, but readiness answers 503 and
 *   every answer carries `Connection: close`, so the gateway opens no new request on a connection
 *   it has used; a connection it leaves idle it closes itself when its idle timeout (shorter than
 *   DRAIN_DELAY) passes. By the end of the delay no idle keep-alive connection remains for the
 *   service to close, so none is closed under a request already on the wire.
 * - closing (`app.close()`): the listener stops, requests in flight finish. A request still arriving
 *   on an open connection (a client with a longer idle timeout) is answered 503 in the contract's
 *   shape with Retry-After before any other hook runs, so no new work starts after the pool closes.
 */
export default fp(
  async function drainingPlugin(app: FastifyInstance) {
    let draining = false
    let closing = false
    app.decorate('draining', {
      getter: () => draining,
    })
    app.decorate('startDraining', () => {
      draining = true
    })
    app.addHook('preClose', async () => {
      draining = true
      closing = true
    })
    app.addHook('onRequest', async (request, reply) => {
      if (!closing) return
      reply.header('retry-after', '5')
      return sendProblem(reply, 503, 'service_unavailable', 'The service is shutting down; retry on another instance.')
    })
    app.addHook('onSend', async (request, reply) => {
      if (draining) reply.header('connection', 'close')
    })
  },
  { name: 'draining' },
)

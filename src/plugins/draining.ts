import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { sendProblem } from './errors.js'

/** After the listener closes, connections without a request are kept this long for one already sent. */
const LAST_REQUESTS_MS = 1_000

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
 * - closing (`app.close()`): the listener stops; requests in flight finish, and a request that
 *   still arrives on a connection accepted before (one the gateway had just opened) is served too,
 *   with `Connection: close`: the pool closes only once every connection has ended. After the
 *   close, a request that still reaches the router is answered 503 in the contract's shape with
 *   Retry-After before any other hook runs.
 */
export default fp(
  async function drainingPlugin(app: FastifyInstance) {
    let draining = false
    let closed = false
    app.decorate('draining', {
      getter: () => draining,
    })
    app.decorate('startDraining', () => {
      draining = true
    })
    app.addHook('preClose', async () => {
      draining = true
      // http.Server.close() closes idle connections at once, and a connection the gateway has just
      // opened, its request still on the wire, counts as idle: close them a moment later instead.
      const server = app.server
      const closeIdle = server.closeIdleConnections.bind(server)
      server.closeIdleConnections = () => void setTimeout(closeIdle, LAST_REQUESTS_MS).unref()
    })
    // onClose hooks run once the HTTP server has closed, every connection ended.
    app.addHook('onClose', async () => {
      closed = true
    })
    app.addHook('onRequest', async (request, reply) => {
      if (!closed) return
      reply.header('retry-after', '5')
      return sendProblem(reply, 503, 'service_unavailable', 'The service is shutting down; retry on another instance.')
    })
    app.addHook('onSend', async (request, reply) => {
      if (draining) reply.header('connection', 'close')
    })
  },
  { name: 'draining' },
)

import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { sendProblem } from './errors.js'

/**
 * While the service shuts down: requests still arriving on open keep-alive connections are
 * answered 503 in the contract's shape with Retry-After (Fastify's own drain answer is plain JSON),
 * before any other hook runs, so no new work starts; requests already in flight finish, and their
 * answers close the connection, which would otherwise hold the shutdown for the keep-alive timeout.
 */
export default fp(
  async function drainingPlugin(app: FastifyInstance) {
    let closing = false
    app.addHook('preClose', async () => {
      closing = true
    })
    app.addHook('onRequest', async (request, reply) => {
      if (!closing) return
      reply.header('retry-after', '5')
      return sendProblem(reply, 503, 'service_unavailable', 'The service is shutting down; retry on another instance.')
    })
    app.addHook('onSend', async (request, reply) => {
      if (closing) reply.header('connection', 'close')
    })
  },
  { name: 'draining' },
)

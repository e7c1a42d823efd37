import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { problem } from '../lib/problem.js'

/** How many fields of the request are Host (Node keeps the first in `headers` and drops the others). */
function hostFields(rawHeaders: readonly string[]): number {
  let count = 0
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index]!
    if (name.length === 4 && name.toLowerCase() === 'host') count += 1
  }
  return count
}

/** RFC 9112 §3.2: a request with more than one Host field is 400, whichever of them a proxy or the service would read. */
export default fp(
  async function singleHostHeader(app: FastifyInstance) {
    app.addHook('onRequest', async (request) => {
      if (hostFields(request.raw.rawHeaders) > 1) throw problem(400, 'invalid', 'A request carries one Host header field (RFC 9112 §3.2).')
    })
  },
  { name: 'single-host-header' },
)

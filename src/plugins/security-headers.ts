import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

/**
 * nosniff, frame protection and, since the API answers only JSON, a Content-Security-Policy that
 * lets nothing load or frame it. TLS ends at the gateway, which owns Strict-Transport-Security.
 */
const HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  frameguard: { action: 'deny' },
  strictTransportSecurity: false,
}

/**
 * The headers helmet sets for these options, read once from its middleware. They depend on nothing
 * in the request, and @fastify/helmet would rebuild the middleware from the options on every request.
 */
export function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers[name.toLowerCase()] = String(value)
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()]
    },
  }
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (error?: unknown) => {
    if (error) throw error
  })
  return headers
}

/**
 * Security headers on every answer, errors and unknown routes included. The `/docs` page sets its
 * own policy (src/plugins/docs.ts), which replaces this one there.
 */
export default fp(
  async function securityHeaders(app: FastifyInstance) {
    const headers = helmetHeaders(HELMET_OPTIONS)
    app.addHook('onRequest', (_request, reply, done) => {
      reply.headers(headers)
      done()
    })
  },
  { name: 'security-headers' },
)

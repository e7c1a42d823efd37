import fastifyHelmet from '@fastify/helmet'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * Security headers on every answer, through the ecosystem's plugin: nosniff, frame protection and,
 * since the API answers only JSON, a Content-Security-Policy that lets nothing load or frame it.
 * The `/docs` page sets its own policy (src/plugins/docs.ts), which replaces this one there.
 */
export default fp(
  async function securityHeaders(app: FastifyInstance) {
    await app.register(fastifyHelmet, {
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      frameguard: { action: 'deny' },
      // TLS ends at the gateway, which owns Strict-Transport-Security for the whole site.
      strictTransportSecurity: false,
    })
  },
  { name: 'security-headers' },
)

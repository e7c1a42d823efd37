import { createHash } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { JsonWebKey } from 'node:crypto'
import { jwksRouteSchema } from '../../schemas/auth.js'
import type { Config } from '../config.js'

/** RFC 7638 thumbprint: the key id the gateway matches against the token header's `kid`. */
export function jwkThumbprint(jwk: JsonWebKey): string {
  const members = jwk.kty === 'RSA' ? { e: jwk.e, kty: jwk.kty, n: jwk.n } : { crv: jwk.crv, kty: jwk.kty, x: jwk.x }
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url')
}

export function publicJwks(config: Config['jwt']) {
  if (config.algorithm === 'HS256') return { keys: [] }
  const jwk = config.publicKeyObject.export({ format: 'jwk' })
  return { keys: [{ ...jwk, kty: String(jwk.kty), kid: jwkThumbprint(jwk), alg: config.algorithm, use: 'sig' }] }
}

/** Public keys for verifying the service's tokens; empty when tokens are signed with a shared secret. */
const jwksRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const body = publicJwks(config.jwt)
  app.get(
    '/.well-known/jwks.json',
    { schema: jwksRouteSchema, config: { public: true } },
    async (request, reply) => {
      reply.header('cache-control', 'public, max-age=300')
      return body
    },
  )
}

export default jwksRoutes

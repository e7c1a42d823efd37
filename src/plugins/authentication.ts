import fastifyJwt from '@fastify/jwt'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { findActiveUserForToken, type AuthenticatedUser } from '../auth/repository.js'
import { tokenNotValid } from '../auth/sessions.js'
import { TokenSigner, type TokenClaims } from '../auth/tokens.js'
import type { Config } from '../config.js'
import { UUID_FORMAT } from '../lib/formats.js'
import { problem } from '../lib/problem.js'
import { findUserWithMembership } from '../tenancy/principal.js'
import { jwkThumbprint } from './jwks.js'

export interface AuthContext {
  user: AuthenticatedUser
  claims: TokenClaims
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reachable without a bearer token (routes 1, 2, 3, 10, 12, health, docs, JWKS). */
    public?: boolean
  }
  interface FastifyRequest {
    /** Set by the JWT hook on every non-public route. */
    auth: AuthContext
  }
  interface FastifyInstance {
    tokens: TokenSigner
  }
}

const notAuthenticated = () =>
  problem(401, 'not_authenticated', 'Authentication credentials were not provided.')

function jwtPluginOptions(config: Config['jwt']) {
  const kid = config.algorithm === 'HS256' ? undefined : jwkThumbprint(config.publicKeyObject.export({ format: 'jwk' }))
  const common = {
    sign: { algorithm: config.algorithm, ...(kid ? { kid } : {}) },
    verify: {
      algorithms: [config.algorithm],
      // fast-jwt checks iss/aud only when present: configured means required.
      requiredClaims: [
        'exp', 'iat', 'jti', 'token_type', 'user_id',
        ...(config.issuer ? ['iss'] : []),
        ...(config.audience ? ['aud'] : []),
      ],
      ...(config.issuer ? { allowedIss: config.issuer } : {}),
      ...(config.audience ? { allowedAud: config.audience } : {}),
    },
  }
  const secret =
    config.algorithm === 'HS256' ? config.secret : { private: config.privateKey, public: config.publicKey }
  return { ...common, secret }
}

/**
 * The company role whose membership the route will check (src/plugins/tenancy.ts), when its id is
 * well-formed: fetched with the user in one query. A malformed id is left to schema validation (400).
 */
function companyRoleToPrefetch(request: FastifyRequest): string | undefined {
  if (!request.routeOptions.config.companyRole) return undefined
  const id = (request.params as { company_role_id?: unknown } | undefined)?.company_role_id
  return typeof id === 'string' && UUID_FORMAT.test(id) ? id : undefined
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization
  if (!header) return undefined
  const [scheme, token, ...rest] = header.trim().split(/\s+/)
  if (scheme?.toLowerCase() !== 'bearer') return undefined
  if (!token || rest.length > 0) throw tokenNotValid()
  return token
}

/**
 * Registers the JWT keys and the `onRequest` hook that authenticates every route whose config does
 * not mark it public. The user must still exist and be active, checked on every request (§2).
 */
export default fp(
  async function authenticationPlugin(app: FastifyInstance, options: { config: Config }) {
    await app.register(fastifyJwt, jwtPluginOptions(options.config.jwt))
    app.decorate('tokens', new TokenSigner(app.jwt, options.config))
    app.decorateRequest('auth', null as unknown as AuthContext)

    app.addHook('onRequest', async (request) => {
      if (request.is404 || request.routeOptions.config.public) return
      const token = bearerToken(request)
      if (token === undefined) throw notAuthenticated()
      const claims = app.tokens.verify(token, 'access')
      if (!claims) throw tokenNotValid()
      const companyRoleId = companyRoleToPrefetch(request)
      if (companyRoleId === undefined) {
        const user = await findActiveUserForToken(app.db, claims.user_id, claims.fid)
        if (!user) throw tokenNotValid()
        request.auth = { user, claims }
        return
      }
      const principal = await findUserWithMembership(app.db, claims.user_id, claims.fid, companyRoleId)
      if (!principal) throw tokenNotValid()
      request.auth = { user: principal.user, claims }
      request.prefetchedMembership = { companyRoleId, membership: principal.membership }
    })
  },
  { name: 'authentication', dependencies: ['database'] },
)

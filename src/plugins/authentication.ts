import fastifyJwt from '@fastify/jwt'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { AuthenticatedUser } from '../auth/repository.js'
import { tokenNotValid } from '../auth/sessions.js'
import { TokenSigner, type TokenClaims } from '../auth/tokens.js'
import type { Config } from '../config.js'
import { UUID_FORMAT } from '../lib/formats.js'
import { problem } from '../lib/problem.js'
import { findActiveUserForToken, findUserWithMembership, principalKey } from '../tenancy/principal.js'
import { jwkThumbprint } from './jwks.js'

export interface AuthContext {
  user: AuthenticatedUser
  claims: TokenClaims
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reachable without a bearer token (routes 1, 2, 3, 10, 12, health, docs, JWKS). */
    public?: boolean
    /**
     * The handler's own statement checks that the token's user is active (and their membership),
     * so that a read costs one round trip: the JWT hook only verifies the token, and the handler
     * must call `admitUser` (below) or `admitMember` (src/plugins/tenancy.ts) before answering.
     */
    principalInStatement?: boolean
  }
  interface FastifyRequest {
    /** Set once the token's user is known to be active: by the JWT hook, or by `admitUser`/`admitMember`. */
    auth: AuthContext
    /** The verified claims of the bearer token, on every non-public route. */
    tokenClaims: TokenClaims
  }
  interface FastifyInstance {
    tokens: TokenSigner
  }
}

declare module '@fastify/jwt' {
  interface JWT {
    /** The same keys and checks without the verification cache: for refresh tokens (below). */
    refresh: JWT
  }
}

const notAuthenticated = () =>
  problem(401, 'not_authenticated', 'Authentication credentials were not provided.')

/**
 * Verified tokens whose signature and claims check fast-jwt remembers (LRU, keyed by a SHA-256 of
 * the token, each entry until the token's `exp`; a failure is never reused). A client sends the same
 * access token with every request for its lifetime: a hit costs a hash instead of a decode and an
 * HMAC. This remembers only what the token itself says. Whether its user is still active, its family
 * unrevoked and its membership current is read from the database on every request (§2), so a
 * disabled user or a removed membership still loses access at once.
 */
const VERIFIED_TOKEN_CACHE_SIZE = 1000

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
      cache: VERIFIED_TOKEN_CACHE_SIZE,
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
 * The token's user as a query found them (by the JWT hook, or by a `principalInStatement` route's
 * own statement): undefined when not active or the token's family is revoked, which is a 401.
 */
export function admitUser(request: FastifyRequest, user: AuthenticatedUser | undefined): AuthenticatedUser {
  if (!user) throw tokenNotValid()
  request.auth = { user, claims: request.tokenClaims }
  return user
}

async function assertPrincipalAdmitted(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (request.auth === null && reply.statusCode < 400) {
    throw new Error('a principalInStatement route answered without admitting the principal')
  }
  return payload
}

/**
 * Registers the JWT keys and the `onRequest` hook that authenticates every route whose config does
 * not mark it public. The user must still exist and be active, checked on every request (§2).
 */
export default fp(
  async function authenticationPlugin(app: FastifyInstance, options: { config: Config }) {
    const jwtOptions = jwtPluginOptions(options.config.jwt)
    await app.register(fastifyJwt, jwtOptions)
    // A refresh token is verified once in its life (it is spent then): remembering it would only
    // push the access tokens, which come back with every request, out of the cache.
    await app.register(fastifyJwt, { ...jwtOptions, verify: { ...jwtOptions.verify, cache: false }, namespace: 'refresh' })
    app.decorate('tokens', new TokenSigner(app.jwt, options.config, app.jwt.refresh))
    app.decorateRequest('auth', null as unknown as AuthContext)
    app.decorateRequest('tokenClaims', null as unknown as TokenClaims)

    app.addHook('onRequest', async (request) => {
      if (request.is404 || request.routeOptions.config.public) return
      const token = bearerToken(request)
      if (token === undefined) throw notAuthenticated()
      const claims = app.tokens.verify(token, 'access')
      if (!claims) throw tokenNotValid()
      request.tokenClaims = claims
      if (request.routeOptions.config.principalInStatement) return
      const key = principalKey(request)
      const companyRoleId = companyRoleToPrefetch(request)
      if (companyRoleId === undefined) {
        admitUser(request, await findActiveUserForToken(app.db, key))
        return
      }
      const principal = await findUserWithMembership(app.db, { ...key, companyRoleId })
      admitUser(request, principal?.user)
      request.prefetchedMembership = { companyRoleId, membership: principal?.membership }
    })

    // A safety net on `principalInStatement` routes: a success that nobody admitted is a bug, and
    // must not reach the client. onSend, not preSerialization: a body sent as JSON text (route 9)
    // skips serialisation and its hooks.
    app.addHook('onRoute', (route) => {
      if (!route.config?.principalInStatement) return
      const existing = route.onSend ?? []
      route.onSend = [...(Array.isArray(existing) ? existing : [existing]), assertPrincipalAdmitted]
    })
  },
  { name: 'authentication', dependencies: ['database'] },
)

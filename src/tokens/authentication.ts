import fastifyJwt from '@fastify/jwt'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { tokenNotValid, TokenSigner, VerifiedTokenCache, type TokenClaims } from './tokens.js'
import type { Config } from '../config.js'
import { problem } from '../lib/problem.js'
import { deploymentKidCutover } from '../db/kid-cutover.js'
import { keyRing, kidlessUntilMs, signingKeyId } from './signing-keys.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reachable without a bearer token (routes 1, 2, 3, 10, 12, health, docs, JWKS). */
    public?: boolean
  }
  interface FastifyRequest {
    /** The verified claims of the bearer token, on every non-public route. */
    tokenClaims: TokenClaims
  }
  interface FastifyInstance {
    tokens: TokenSigner
  }
}

const notAuthenticated = () => problem(401, 'not_authenticated', 'Authentication credentials were not provided.')

/**
 * Access tokens remembered once verified (src/tokens/tokens.ts), each until its `exp`. This remembers
 * only what the token itself says. Whether its user is still active, its family unrevoked and its
 * membership current is read from the database on every request (§2), so a disabled user or a
 * removed membership still loses access at once.
 */
const VERIFIED_TOKEN_CACHE_SIZE = 1000

function jwtPluginOptions(config: Config['jwt']) {
  const common = {
    sign: { algorithm: config.algorithm, kid: signingKeyId(config) },
    verify: {
      algorithms: [config.algorithm],
      // fast-jwt checks iss/aud only when present: configured means required.
      requiredClaims: ['exp', 'iat', 'jti', 'token_type', 'user_id', ...(config.issuer ? ['iss'] : []), ...(config.audience ? ['aud'] : [])],
      ...(config.issuer ? { allowedIss: config.issuer } : {}),
      ...(config.audience ? { allowedAud: config.audience } : {}),
      // The service keeps its own cache of access tokens, keyed without hashing (src/tokens/tokens.ts).
      cache: false,
    },
  }
  const secret = config.algorithm === 'HS256' ? config.secret : { private: config.privateKey, public: config.publicKey }
  return { ...common, secret }
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
 * The bearer token's signature and claims (401), the first onRequest hook of every authenticated
 * route (src/tenancy/routes.ts declares it). Whether its user is still active, and their
 * membership, is the tenancy pipeline's to read and decide, after validation.
 */
export async function authenticate(request: FastifyRequest): Promise<void> {
  const token = bearerToken(request)
  if (token === undefined) throw notAuthenticated()
  const claims = request.server.tokens.verify(token, 'access')
  if (!claims) throw tokenNotValid()
  request.tokenClaims = claims
}

/** Registers the JWT keys and the token signer (`app.tokens`) that issues and verifies the service's tokens. */
export default fp(
  async function authenticationPlugin(app: FastifyInstance, options: { config: Config }) {
    const jwtOptions = jwtPluginOptions(options.config.jwt)
    await app.register(fastifyJwt, jwtOptions)
    const ring = keyRing(options.config)
    app.decorate('tokens', new TokenSigner(app.jwt, options.config, new VerifiedTokenCache(VERIFIED_TOKEN_CACHE_SIZE), ring))
    // The cut-over is the deployment's, not a process's: stored once, the same for every instance and restart.
    if (options.config.jwt.kidCutoverMs === undefined) {
      app.addHook('onReady', async () => {
        try {
          ring.kidlessUntilMs = kidlessUntilMs(options.config, (await deploymentKidCutover(app.db)).getTime())
        } catch (error) {
          app.log.warn(
            { err: error },
            "the deployment's kid cut-over could not be read: tokens without kid are tried with every key until the longest token lifetime after this start",
          )
        }
      })
    }
    app.decorateRequest('tokenClaims', null as unknown as TokenClaims)
  },
  { name: 'authentication', dependencies: ['database'] },
)

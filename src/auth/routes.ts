import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { jwksRouteSchema, loginRouteSchema, refreshRouteSchema, tokenRouteSchema } from '../../schemas/auth.js'
import { publicJwks } from '../tokens/jwks.js'
import { publicRoute } from '../tenancy/routes.js'
import { listUserCompanies } from '../tenancy/user-companies.js'
import type { Config } from '../config.js'
import { logIn } from './login.js'
import { throttleReason, type LoginThrottle } from './throttle/login-throttle.js'
import { rotateRefreshToken } from '../tokens/sessions.js'
import { audit } from '../observability/audit.js'

export interface AuthRouteOptions {
  config: Config
  throttle: LoginThrottle
}

const isThrottled = (error: unknown): boolean => (error as { statusCode?: unknown } | null)?.statusCode === 429

/** DRF's EmailField trims before it validates, so `" Alice@Acme.example "` is a valid login. */
async function trimEmail(request: FastifyRequest): Promise<void> {
  const body = request.body as { email?: unknown } | undefined
  if (body && typeof body === 'object' && typeof body.email === 'string') body.email = body.email.trim()
}

/** Routes 1–3: tokens, the application's login, and refresh-token rotation. */
const authRoutes: FastifyPluginAsyncTypebox<AuthRouteOptions> = async (app, { config, throttle }) => {
  const logInWith = async <Read = undefined>(
    request: FastifyRequest,
    email: string,
    password: string,
    via: 'token' | 'login',
    readFirst?: (userId: string) => Promise<Read>,
  ) => {
    try {
      const login = await logIn<Read>(app.db, app.tokens, throttle, {
        ...(readFirst ? { readFirst } : {}),
        clientIp: request.ip,
        email,
        password,
        absoluteTtlSeconds: config.refreshAbsoluteTtl,
        failureFloorMs: config.loginFailureMinMs,
        onFloorExceeded: (elapsedMs) =>
          request.log.warn(
            { elapsedMs: Math.round(elapsedMs), floorMs: config.loginFailureMinMs },
            'failed login took longer than LOGIN_FAILURE_MIN_MS: its time may tell the stored hash apart',
          ),
      })
      app.metrics.loginThrottle.labels('allowed').inc()
      audit.loginSucceeded(request.log, { userId: login.user.id, clientAddress: request.ip, via })
      return login
    } catch (error) {
      if (isThrottled(error)) {
        app.metrics.loginThrottle.labels('throttled').inc()
        const retryAfter = (error as { headers?: Record<string, string> }).headers?.['retry-after']
        audit.loginThrottled(request.log, { email, clientAddress: request.ip, reason: throttleReason(error), retryAfter })
      } else app.metrics.loginThrottle.labels('allowed').inc()
      throw error
    }
  }

  app.route(
    publicRoute({
      method: 'POST',
      url: '/token',
      schema: tokenRouteSchema,
      preValidation: trimEmail,
      handler: async (request) => {
        const { tokens } = await logInWith(request, request.body.email, request.body.password, 'token')
        return { refresh: tokens.refresh, access: tokens.access }
      },
    }),
  )

  app.route(
    publicRoute({
      method: 'POST',
      url: '/login',
      schema: loginRouteSchema,
      preValidation: trimEmail,
      handler: async (request) => {
        // The companies are read before the session is written: a failure of theirs leaves no session behind its 503.
        const {
          user,
          tokens,
          read: companies,
        } = await logInWith(request, request.body.email, request.body.password, 'login', (userId) => listUserCompanies(app.db, userId))
        return { refresh: tokens.refresh, access: tokens.access, user, companies }
      },
    }),
  )

  app.route(
    publicRoute({
      method: 'POST',
      url: '/token/refresh',
      schema: refreshRouteSchema,
      handler: async (request) => {
        const seen = { outcome: 'rotated' as 'rotated' | 'retried' | 'replay_revoked' }
        try {
          const tokens = await rotateRefreshToken(app.db, app.tokens, request.body.refresh, config.refreshReuseGrace, {
            replayed: (userId, familyId) => {
              seen.outcome = 'replay_revoked'
              audit.refreshTokenReplayed(request.log, { userId, familyId, clientAddress: request.ip })
            },
            retried: (userId, familyId) => {
              seen.outcome = 'retried'
              audit.refreshTokenRetried(request.log, { userId, familyId, clientAddress: request.ip })
            },
          })
          app.metrics.refreshOutcomes.labels(seen.outcome).inc()
          return { access: tokens.access, refresh: tokens.refresh }
        } catch (error) {
          app.metrics.refreshOutcomes.labels(seen.outcome === 'replay_revoked' ? 'replay_revoked' : 'rejected').inc()
          throw error
        }
      },
    }),
  )
}

/** Public keys for verifying the service's tokens; empty when tokens are signed with a shared secret. */
export const jwksRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const body = publicJwks(config.jwt)
  app.route(
    publicRoute({
      method: 'GET',
      url: '/.well-known/jwks.json',
      schema: jwksRouteSchema,
      handler: async (_request, reply) => {
        reply.header('cache-control', 'public, max-age=300')
        return body
      },
    }),
  )
}

export default authRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { confirmMigrationRouteSchema } from '../../schemas/registration.js'
import type { Config } from '../config.js'
import { emptyBodyAsObject } from '../lib/optional-body.js'
import { wellFormedJsonParser } from '../lib/well-formed-json.js'
import { confirmMigratedAccount } from './confirmation.js'
import { noStore } from '../lib/no-store.js'
import { audit } from '../observability/audit.js'

export interface RegistrationPluginOptions {
  config: Config
}

/**
 * The body of this route is optional, and DRF read an empty body as no data: an empty
 * `application/json` body is `{}` here instead of a parse error (encapsulated to this plugin).
 */
function acceptEmptyJson(app: FastifyInstance): void {
  const parseJson = wellFormedJsonParser(app)
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body.length === 0) done(null, {})
    else parseJson(request, body.toString(), done)
  })
}

/** Route 10: confirmation of accounts migrated from the old platform. */
const registrationRoutes: FastifyPluginAsyncTypebox<RegistrationPluginOptions> = async (app, { config }) => {
  app.addHook('onRequest', noStore)
  acceptEmptyJson(app)

  app.post(
    '/confirm-migration-account/:uidb64/:token',
    {
      schema: confirmMigrationRouteSchema,
      // Its answer holds a session: replayed no longer than a spent refresh token's successor is (docs/retries.md).
      config: { public: true, idempotency: true, idempotencyReplayFor: config.refreshReuseGrace },
      preValidation: emptyBodyAsObject,
    },
    async (request, reply) => {
      const { user, tokens } = await confirmMigratedAccount(request.db, app.tokens, config, request.params, request.body.password)
      // Confirming starts the account's first session: a login for the audit trail.
      audit.loginSucceeded(request.log, { userId: user.id, clientAddress: request.ip, via: 'confirmation' })
      reply.code(201)
      return { refresh: tokens.refresh, access: tokens.access, user }
    },
  )
}

export default registrationRoutes

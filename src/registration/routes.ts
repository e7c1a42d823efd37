import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { confirmMigrationRouteSchema } from '../../schemas/registration.js'
import type { Config } from '../config.js'
import { emptyBodyAsObject } from '../lib/optional-body.js'
import { publicRoute } from '../tenancy/routes.js'
import { confirmMigratedAccount } from './confirmation.js'
import { audit } from '../observability/audit.js'
import { sessionAsAnswered } from '../tokens/sessions.js'

/** Route 10: confirmation of accounts migrated from the old platform. */
const confirmationRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  app.route(
    publicRoute({
      method: 'POST',
      url: '/confirm-migration-account/:uidb64/:token',
      schema: confirmMigrationRouteSchema,
      // The link's secret is the credential; an Idempotency-Key is scoped to it. Its answer holds a
      // session: replayed no longer than a spent refresh token's successor is, and only until the
      // session is refreshed (docs/retries.md).
      config: {
        idempotency: true,
        idempotencyReplayFor: config.refreshReuseGrace,
        idempotencyReplayable: (answerBody: string) => sessionAsAnswered(app.db, app.tokens, answerBody),
      },
      preValidation: emptyBodyAsObject,
      handler: async (request, reply, { db }) => {
        const { user, tokens } = await confirmMigratedAccount(db, app.tokens, config, request.params, request.body.password)
        // Confirming starts the account's first session: a login for the audit trail.
        audit.loginSucceeded(request.log, { userId: user.id, clientAddress: request.ip, via: 'confirmation' })
        reply.code(201)
        return { refresh: tokens.refresh, access: tokens.access, user }
      },
    }),
  )
}

export default confirmationRoutes

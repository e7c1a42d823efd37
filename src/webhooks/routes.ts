import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { esignWebhookRouteSchema } from '../../schemas/webhooks.js'
import type { Config } from '../config.js'
import { problem } from '../lib/problem.js'
import { wellFormedJsonParser } from '../lib/well-formed-json.js'
import { audit } from '../observability/audit.js'
import { publicRoute } from '../tenancy/routes.js'
import { hasValidContentHmac, matchesAnySecret } from './authenticity.js'
import { esignDeliveryReceiver } from './esign-delivery.js'

/** Wrong path secrets per client address (src/auth/throttle/address-failure-limit.ts, given by the app). */
export interface SecretGuessLimit {
  /** A right secret: throws 429 while the address is at its limit, else counts nothing. */
  admit(clientAddress: string): Promise<void>
  /** A wrong secret: counted, or throws 429 when the address is already at its limit. */
  fail(clientAddress: string): Promise<void>
}

export interface WebhookRouteOptions {
  config: Config
  secretGuesses: SecretGuessLimit
}

type JsonParser = (request: FastifyRequest, body: string, done: (error: Error | null, body?: unknown) => void) => void

const WEBHOOK_BODY_LIMIT = 1024 * 1024

/** Inbound provider notifications (route 12), in ./plugin.ts's scope of raw JSON bodies, parsed once the HMAC has passed. */
const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRouteOptions> = async (app, { config, secretGuesses }) => {
  // Fastify's own parser, for the same errors (empty, invalid) and prototype-poisoning protection,
  // refusing lone surrogates as every JSON body is.
  const defaultJsonParser = wellFormedJsonParser(app) as JsonParser
  const parseJson = (request: FastifyRequest, raw: Buffer) =>
    new Promise<unknown>((resolve, reject) => {
      defaultJsonParser(request, raw.toString('utf8'), (error, body) => (error ? reject(error) : resolve(body)))
    })

  const deliveries = esignDeliveryReceiver(app.db)

  app.route(
    publicRoute({
      method: 'POST',
      url: '/webhook/esign/:secret/',
      schema: esignWebhookRouteSchema,
      bodyLimit: WEBHOOK_BODY_LIMIT,
      // Before the body is read: a wrong secret learns nothing, not even whether its body was acceptable.
      // Wrong secrets are limited per address like failed logins: 404 under the limit, then 429 for
      // anything from that address, the right secret too, until the window ends.
      onRequest: async (request) => {
        const right = matchesAnySecret(request.params.secret, config.esignWebhookSecrets)
        try {
          await (right ? secretGuesses.admit(request.ip) : secretGuesses.fail(request.ip))
        } catch (error) {
          app.metrics.webhookDeliveries.labels('rejected').inc()
          audit.webhookRejected(request.log, { provider: 'esign', reason: 'throttled', clientAddress: request.ip })
          throw error
        }
        if (!right) {
          app.metrics.webhookDeliveries.labels('rejected').inc()
          audit.webhookRejected(request.log, { provider: 'esign', reason: 'secret', clientAddress: request.ip })
          throw problem(404, 'not_found', 'Not found.')
        }
      },
      preValidation: async (request) => {
        const key = config.esignWebhookHmacKey
        if (key !== undefined && !hasValidContentHmac(request.rawBody ?? Buffer.alloc(0), request.headers['content-hmac'], key)) {
          app.metrics.webhookDeliveries.labels('rejected').inc()
          audit.webhookRejected(request.log, { provider: 'esign', reason: 'signature', clientAddress: request.ip })
          throw problem(401, 'invalid_signature', 'The Content-Hmac header is missing or does not match the body.')
        }
        if (request.rawBody !== null) request.body = (await parseJson(request, request.rawBody)) as typeof request.body
      },
      handler: async (request, reply) => {
        const receipt = await deliveries.submit({ rawBody: request.rawBody ?? Buffer.alloc(0), notification: request.body })
        app.metrics.webhookDeliveries.labels(receipt.duplicate ? 'duplicate' : (receipt.outcome ?? 'ignored')).inc()
        request.logResult = { event: request.body.event.name, envelope_key: request.body.document.key, ...receipt }
        return reply.code(201).send({ received: true, duplicate: receipt.duplicate })
      },
    }),
  )
}

export default webhookRoutes

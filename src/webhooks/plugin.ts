import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import webhookRoutes, { type WebhookRouteOptions } from './routes.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The body exactly as received; set on the webhook routes only, null when there was none. */
    rawBody: Buffer | null
  }
}

/**
 * Inbound provider notifications' scope: JSON bodies kept raw, because the HMAC and the dedupe key
 * are over the exact bytes (./routes.ts parses them once the HMAC has passed). Every other media
 * type is 415.
 */
const webhookPlugin: FastifyPluginAsyncTypebox<WebhookRouteOptions> = async (app, { config, secretGuesses }) => {
  app.decorateRequest('rawBody', null)
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    request.rawBody = body as Buffer
    done(null, body)
  })
  await app.register(webhookRoutes, { config, secretGuesses })
}

export default webhookPlugin

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'
import { noStore } from '../lib/no-store.js'
import { wellFormedJsonParser } from '../lib/well-formed-json.js'
import confirmationRoutes from './routes.js'

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

/** Registration's scope: never cached, an empty JSON body read as `{}`; its route is in ./routes.ts. */
const registrationPlugin: FastifyPluginAsyncTypebox<RegistrationPluginOptions> = async (app, { config }) => {
  app.addHook('onRequest', noStore)
  acceptEmptyJson(app)
  await app.register(confirmationRoutes, { config })
}

export default registrationPlugin

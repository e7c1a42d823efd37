import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { noStore } from '../lib/no-store.js'
import authRoutes, { type AuthRouteOptions } from './routes.js'

/** Routes 1–3 (./routes.ts), whose answers hold credentials: never stored by a cache. */
const authPlugin: FastifyPluginAsyncTypebox<AuthRouteOptions> = async (app, { config, throttle }) => {
  app.addHook('onRequest', noStore)
  await app.register(authRoutes, { config, throttle })
}

export default authPlugin

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { presenceRouteSchema } from '../../../schemas/chat.js'
import { companyRoute } from '../../tenancy/routes.js'
import { partnerPresenceRead } from './repository.js'
import { presenceStatus } from './presence-status.js'

/** Route 6: a chat partner's presence (written after every company request: src/tenancy/routes.ts). */
const chatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.route(
    companyRoute({
      method: 'GET',
      url: '/v1/:company_role_id/chat/partners/:partner_company_role_id/presence',
      permission: 'chat',
      schema: presenceRouteSchema,
      read: partnerPresenceRead,
      // A role the member shares no conversation with is 404, the read's default.
      handler: async (request, _reply, { data: presence }) => ({
        company_role_id: request.params.partner_company_role_id,
        status: presenceStatus(presence.last_seen_at, presence.now),
        last_seen_at: presence.last_seen_at?.toISOString() ?? null,
      }),
    }),
  )
}

export default chatRoutes

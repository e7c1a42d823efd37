import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { presenceRouteSchema } from '../../../schemas/chat.js'
import { problem } from '../../lib/problem.js'
import { scopedPartnerPresence } from './repository.js'
import { presenceStatus } from './presence-status.js'

/** Route 6: a chat partner's presence (written by ./presence-plugin.ts). */
const chatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/:company_role_id/chat/partners/:partner_company_role_id/presence',
    { schema: presenceRouteSchema, config: { companyRole: { permission: 'chat' }, principalInStatement: true } },
    async (request) => {
      const { partner_company_role_id: partnerId } = request.params
      const presence = await scopedPartnerPresence.read(request, { partnerRoleId: partnerId })
      if (!presence) throw problem(404, 'not_found', 'Not found.')
      return {
        company_role_id: partnerId,
        status: presenceStatus(presence.last_seen_at, presence.now),
        last_seen_at: presence.last_seen_at?.toISOString() ?? null,
      }
    },
  )
}

export default chatRoutes

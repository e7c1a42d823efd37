import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { titleDocumentsRouteSchema } from '../../schemas/marketplace.js'
import { sendJsonText } from '../lib/json-text.js'
import { titleDocumentsJsonFor } from './title-documents.js'

/** The marketplace: titles and their documents (route 9). */
const marketplaceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:company_role_id/title/:title_id/documents',
    {
      schema: titleDocumentsRouteSchema,
      config: { companyRole: { permission: 'marketplace' }, principalInStatement: true },
    },
    async (request, reply) => sendJsonText(reply, await titleDocumentsJsonFor(app.db, request, request.params.title_id)),
  )
}

export default marketplaceRoutes

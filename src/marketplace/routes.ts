import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { titleDocumentsRouteSchema } from '../../schemas/marketplace.js'
import { sendJsonText } from '../lib/json-text.js'
import { companyRoute } from '../tenancy/routes.js'
import { titleDocumentsRead } from './repository.js'

/** The marketplace: titles and their documents (route 9). */
const marketplaceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.route(
    companyRoute({
      method: 'GET',
      url: '/:company_role_id/title/:title_id/documents',
      permission: 'marketplace',
      schema: titleDocumentsRouteSchema,
      read: titleDocumentsRead,
      // A title's documents may be many rows: shed first when the instance is saturated (src/fairness/).
      config: { priority: 'large-read' },
      // A title that does not exist or that the member may not see is 404 (the read's default), as if it did not exist.
      handler: async (_request, reply, { data: title }) => sendJsonText(reply, title.documents_json),
    }),
  )
}

export default marketplaceRoutes

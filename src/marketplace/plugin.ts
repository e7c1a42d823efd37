import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { titleDocumentsRouteSchema } from '../../schemas/marketplace.js'
import { sendJsonText } from '../lib/json-text.js'
import { problem } from '../lib/problem.js'
import { scopedTitleDocuments } from './repository.js'

/** The marketplace: titles and their documents (route 9). */
const marketplaceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:company_role_id/title/:title_id/documents',
    {
      schema: titleDocumentsRouteSchema,
      config: { companyRole: { permission: 'marketplace' }, principalInStatement: true },
    },
    // A title that does not exist or that the member may not see is 404, as if it did not exist.
    async (request, reply) => {
      const title = await scopedTitleDocuments.read(request, { titleId: request.params.title_id })
      if (!title) throw problem(404, 'not_found', 'Not found.')
      return sendJsonText(reply, title.documents_json)
    },
  )
}

export default marketplaceRoutes

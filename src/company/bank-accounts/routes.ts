import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { removeBankAccountRouteSchema } from '../../../schemas/bank-accounts.js'
import { companyRoute } from '../../tenancy/routes.js'
import { removeBankAccount } from './removal.js'

/**
 * A DELETE has no body (RFC 9110 §9.3.5): one sent anyway is not read, whatever its media type
 * (even a malformed one) or size, so it can neither be refused (415, 413) nor change the answer.
 * Node discards it unread.
 */
function ignoreBodies(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    delete request.headers['content-type']
  })
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (request, payload, done) => done(null, undefined))
}

/** Route 8: the company's bank accounts. */
const bankAccountRoutes: FastifyPluginAsyncTypebox = async (app) => {
  ignoreBodies(app)
  app.route(
    companyRoute({
      method: 'DELETE',
      url: '/v1/:company_role_id/bank-account/:bank_account_id',
      permission: 'bank_accounts',
      schema: removeBankAccountRouteSchema,
      handler: async (request, reply, { companyRole, user, db }) => {
        await removeBankAccount(db, companyRole.companyId, request.params.bank_account_id, user.id)
        return reply.code(204).send(null)
      },
    }),
  )
}

export default bankAccountRoutes

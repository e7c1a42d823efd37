import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { removeBankAccountRouteSchema } from '../../schemas/bank-accounts.js'
import { removeBankAccount } from './bank-account-removal.js'

/** Route 8: the company's bank accounts. */
const bankAccountRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.delete(
    '/v1/:company_role_id/bank-account/:bank_account_id',
    { schema: removeBankAccountRouteSchema, config: { companyRole: { permission: 'bank_accounts' } } },
    async (request, reply) => {
      await removeBankAccount(app.db, request.companyRole.companyId, request.params.bank_account_id, request.auth.user.id)
      return reply.code(204).send(null)
    },
  )
}

export default bankAccountRoutes

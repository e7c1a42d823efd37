import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { userCompaniesRouteSchema } from '../../schemas/company.js'
import { admitUser } from '../plugins/authentication.js'
import { principalKey } from '../tenancy/principal.js'
import { findPrincipalCompanies } from '../tenancy/user-companies.js'
import documentsRoutes from './kyc/routes.js'
import chatRoutes from './chat/routes.js'
import bankAccountRoutes from './bank-accounts/routes.js'
import customerRoutes from './customers/routes.js'

/** Company data: the caller's companies (route 4) and the company-role routes. */
const companyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/get-user-companies',
    { schema: userCompaniesRouteSchema, config: { principalInStatement: true } },
    async (request) => {
      const found = await findPrincipalCompanies(app.db, principalKey(request))
      admitUser(request, found?.user)
      return found?.companies
    },
  )
  await app.register(documentsRoutes)
  await app.register(chatRoutes)
  await app.register(bankAccountRoutes)
  await app.register(customerRoutes)
}

export default companyRoutes

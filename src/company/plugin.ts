import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import bankAccountRoutes from './bank-accounts/routes.js'
import chatRoutes from './chat/routes.js'
import userCompaniesRoutes from './companies/routes.js'
import customerRoutes from './customers/routes.js'
import kycRoutes from './kyc/routes.js'

/** Company data: the caller's companies (route 4) and the company-role routes, one folder per subdomain. */
const companyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(userCompaniesRoutes)
  await app.register(kycRoutes)
  await app.register(chatRoutes)
  await app.register(bankAccountRoutes)
  await app.register(customerRoutes)
}

export default companyRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { userCompaniesRouteSchema } from '../../schemas/company.js'
import { listUserCompanies } from './user-companies.js'
import documentsRoutes from './documents-routes.js'
import chatRoutes from './chat-routes.js'
import bankAccountRoutes from './bank-account-routes.js'
import customerRoutes from './customer-routes.js'

/** Company data: the caller's companies (route 4) and the company-role routes. */
const companyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/v1/get-user-companies', { schema: userCompaniesRouteSchema }, async (request) =>
    listUserCompanies(app.db, request.auth.user.id),
  )
  await app.register(documentsRoutes)
  await app.register(chatRoutes)
  await app.register(bankAccountRoutes)
  await app.register(customerRoutes)
}

export default companyRoutes

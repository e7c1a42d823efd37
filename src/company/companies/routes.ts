import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { userCompaniesRouteSchema } from '../../../schemas/company.js'
import { userRoute } from '../../tenancy/routes.js'
import { groupByCompany, USER_COMPANIES_ORDER, userCompaniesRead } from '../../tenancy/user-companies.js'

/** Route 4: the caller's companies, read with the principal in one statement (src/tenancy/user-companies.ts). */
const userCompaniesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.route(
    userRoute({
      method: 'GET',
      url: '/v1/get-user-companies',
      schema: userCompaniesRouteSchema,
      read: userCompaniesRead,
      orderBy: USER_COMPANIES_ORDER,
      handler: async (_request, _reply, { data }) => groupByCompany(data),
    }),
  )
}

export default userCompaniesRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { userCompaniesRouteSchema } from '../../../schemas/company.js'
import { readUserCompanies } from '../../tenancy/user-companies.js'

/** Route 4: the caller's companies, read with the principal in one statement (src/tenancy/user-companies.ts). */
const userCompaniesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/v1/get-user-companies', { schema: userCompaniesRouteSchema, config: { principalInStatement: true } }, async (request) =>
    readUserCompanies(request),
  )
}

export default userCompaniesRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { saveCustomerRouteSchema } from '../../../schemas/customers.js'
import { companyRoute } from '../../tenancy/routes.js'
import type { Customer } from './repository.js'
import { saveCustomer } from './upsert.js'

/** Surrounding spaces are noise from forms and spreadsheets; trimmed before the schema judges them. */
async function trimTextFields(request: FastifyRequest): Promise<void> {
  const body = request.body as Record<string, unknown> | undefined
  if (!body || typeof body !== 'object' || Array.isArray(body)) return
  for (const field of ['name', 'email', 'phone', 'tax_id']) {
    const value = body[field]
    if (typeof value === 'string') body[field] = value.trim()
  }
}

const customerBody = (customer: Customer) => ({
  ...customer,
  created_at: customer.created_at.toISOString(),
  updated_at: customer.updated_at.toISOString(),
})

/** Route 11: the seller's customers (the payers of its titles). */
const customerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.route(
    companyRoute({
      method: 'POST',
      url: '/v1/:company_role_id/customers/:id',
      role: 'seller',
      permission: 'customers',
      schema: saveCustomerRouteSchema,
      config: { idempotency: true },
      preValidation: trimTextFields,
      handler: async (request, reply, { companyRole, db }) => {
        const customer = await saveCustomer(db, companyRole.companyRoleId, request.params.id, request.body)
        return reply.code(201).send(customerBody(customer))
      },
    }),
  )
}

export default customerRoutes

import type { HttpError } from '@fastify/sensible'
import { uniqueViolation } from '../../db/errors.js'
import type { Db } from '../../../db/types.js'
import { problem } from '../../lib/problem.js'
import { findCustomerIdByTaxId, findCustomerTaxId, upsertCustomer, type Customer } from './repository.js'
import { validateCustomer, type CustomerBody } from './rules.js'

const TAX_ID_CONSTRAINT = 'customers_role_tax_id_key'

/** The upsert left the role's existing row alone: it carries another tax id. */
async function taxIdImmutableProblem(db: Db, companyRoleId: string, id: string): Promise<HttpError> {
  return problem(409, 'tax_id_immutable', 'The tax_id of an existing customer cannot be changed.', {
    extra: { current_tax_id: (await findCustomerTaxId(db, companyRoleId, id)) ?? null },
  })
}

/**
 * Route 11: creates or updates the seller's customer under the client's id, so that a partner can
 * retry safely. Validation problems are 400 `invalid`; the conflicts are 409.
 */
export async function saveCustomer(db: Db, companyRoleId: string, id: string, body: CustomerBody): Promise<Customer> {
  const validation = validateCustomer(body)
  if (!validation.ok) throw problem(400, 'invalid', 'Invalid input.', { extra: { errors: validation.errors } })
  let saved: Customer | undefined
  try {
    saved = await upsertCustomer(db, companyRoleId, id, validation.value)
  } catch (error) {
    if (uniqueViolation(error) !== TAX_ID_CONSTRAINT) throw error
    const existingId = await findCustomerIdByTaxId(db, companyRoleId, validation.value.tax_id)
    // A concurrent save of this same new id won: ON CONFLICT arbitrates on the id only, so the
    // tax id's constraint fired first. The row is ours now; saving again takes the update path.
    if (existingId === id) saved = await upsertCustomer(db, companyRoleId, id, validation.value)
    else {
      throw problem(409, 'duplicate_customer', 'Another customer of this company role has this tax_id.', {
        extra: { customer_id: existingId ?? null },
      })
    }
  }
  if (!saved) throw await taxIdImmutableProblem(db, companyRoleId, id)
  return saved
}

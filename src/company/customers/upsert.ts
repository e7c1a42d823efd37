import type { Db } from '../../../db/types.js'
import { problem } from '../../lib/problem.js'
import { findCustomerConflict, saveCustomerRow, type Customer } from './repository.js'
import { validateCustomer, type CustomerBody } from './rules.js'

/** Saves before giving up on rows that keep appearing and vanishing under this one's id or tax id. */
const ATTEMPTS = 3

/**
 * Route 11: creates or updates the seller's customer under the client's id, so that a partner can
 * retry safely. Validation problems are 400 `invalid`; the conflicts are 409.
 */
export async function saveCustomer(db: Db, companyRoleId: string, id: string, body: CustomerBody): Promise<Customer> {
  const validation = validateCustomer(body)
  if (!validation.ok) throw problem(400, 'invalid', 'Invalid input.', { extra: { errors: validation.errors } })
  const input = validation.value
  for (let attempt = 1; ; attempt++) {
    const saved = await saveCustomerRow(db, companyRoleId, id, input)
    if (saved) return saved
    const { current_tax_id: currentTaxId, holder_id: holderId } = await findCustomerConflict(db, companyRoleId, id, input.tax_id)
    if (currentTaxId !== null && currentTaxId !== input.tax_id) {
      throw problem(409, 'tax_id_immutable', 'The tax_id of an existing customer cannot be changed.', { extra: { current_tax_id: currentTaxId } })
    }
    if (currentTaxId === null && holderId !== null) {
      throw problem(409, 'duplicate_customer', 'Another customer of this company role has this tax_id.', { extra: { customer_id: holderId } })
    }
    // A concurrent save of this same id committed after the statement began (the update could not
    // see its row), or the row in the way is gone: saving again takes the update path, or inserts.
    if (attempt === ATTEMPTS) throw new Error('customer save: the rows in the way kept changing')
  }
}

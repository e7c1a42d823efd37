import { sql, type Selectable } from 'kysely'
import type { CustomersTable, Db } from '../../../db/types.js'
import { Precompiled, rawStatement } from '../../db/precompiled.js'
import type { CustomerInput } from './rules.js'

export type Customer = Selectable<CustomersTable>

type SaveParams = CustomerInput & { companyRoleId: string; id: string }

/**
 * One statement that never fails on a unique constraint (an error would abort a surrounding
 * transaction: a keyed request's, src/idempotency/): inserts the role's customer, else updates the
 * role's row with that id when it has the same tax id (`updated_at` moves only when something
 * changed). Ids are per role: another role's customer with this id is another row. No row back:
 * the insert met a row it cannot see or may not touch, which `findCustomerConflict` tells apart
 * (another tax id under this id; this tax id under another id; a concurrent insert of this id that
 * committed after this statement began, which the update could not see).
 */
const saveStatement = new Precompiled((db, p: SaveParams) =>
  rawStatement(
    db,
    sql<Customer>`
      WITH inserted AS (
        INSERT INTO customers (id, company_role_id, name, tax_id, tax_id_type, email, phone)
        VALUES (${p.id}, ${p.companyRoleId}, ${p.name}, ${p.tax_id}, ${p.tax_id_type}, ${p.email}, ${p.phone})
        ON CONFLICT DO NOTHING
        RETURNING id, company_role_id, name, tax_id, tax_id_type, email, phone, created_at, updated_at
      ), updated AS (
        UPDATE customers
           SET name = ${p.name}, email = ${p.email}, phone = ${p.phone},
               updated_at = CASE
                 WHEN (name, email, phone) IS DISTINCT FROM (${p.name}::text, ${p.email}::text, ${p.phone}::text) THEN now()
                 ELSE updated_at END
         WHERE company_role_id = ${p.companyRoleId} AND id = ${p.id} AND tax_id = ${p.tax_id}
        RETURNING id, company_role_id, name, tax_id, tax_id_type, email, phone, created_at, updated_at
      )
      SELECT * FROM inserted UNION ALL SELECT * FROM updated`,
  ),
)

export function saveCustomerRow(db: Db, companyRoleId: string, id: string, input: CustomerInput): Promise<Customer | undefined> {
  return saveStatement.first(db, { ...input, companyRoleId, id })
}

/** What stands in the way of a save: the tax id of the row with this id, and the id of the row with this tax id. */
export interface CustomerConflict {
  current_tax_id: string | null
  holder_id: string | null
}

const conflictStatement = new Precompiled((db, p: { companyRoleId: string; id: string; taxId: string }) =>
  rawStatement(
    db,
    sql<CustomerConflict>`
      SELECT (SELECT tax_id FROM customers WHERE company_role_id = ${p.companyRoleId} AND id = ${p.id}) AS current_tax_id,
             (SELECT id FROM customers WHERE company_role_id = ${p.companyRoleId} AND tax_id = ${p.taxId}) AS holder_id`,
  ),
)

export async function findCustomerConflict(db: Db, companyRoleId: string, id: string, taxId: string): Promise<CustomerConflict> {
  return (await conflictStatement.first(db, { companyRoleId, id, taxId })) ?? { current_tax_id: null, holder_id: null }
}

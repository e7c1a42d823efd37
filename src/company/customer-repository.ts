import { sql, type Selectable } from 'kysely'
import type { CustomersTable, Db } from '../db/types.js'
import type { CustomerInput } from './customer-rules.js'

export type Customer = Selectable<CustomersTable>

const CUSTOMER_COLUMNS = [
  'id', 'company_role_id', 'name', 'tax_id', 'tax_id_type', 'email', 'phone', 'created_at', 'updated_at',
] as const

/**
 * One atomic statement: inserts the customer, or updates the row with that id when it is the same
 * role's customer with the same tax id (`updated_at` moves only when something changed). Returns
 * undefined when the id belongs to another role or carries another tax id; the row is left as it
 * was. A concurrent insert of the same id waits for the first and then takes the update path. Another
 * id with the same tax id in the role raises customers_role_tax_id_key.
 */
export function upsertCustomer(db: Db, companyRoleId: string, id: string, input: CustomerInput): Promise<Customer | undefined> {
  return db
    .insertInto('customers')
    .values({ id, company_role_id: companyRoleId, ...input })
    .onConflict((conflict) =>
      conflict
        .column('id')
        .doUpdateSet((eb) => ({
          name: eb.ref('excluded.name'),
          email: eb.ref('excluded.email'),
          phone: eb.ref('excluded.phone'),
          updated_at: sql<Date>`CASE
            WHEN (customers.name, customers.email, customers.phone) IS DISTINCT FROM (excluded.name, excluded.email, excluded.phone)
            THEN now() ELSE customers.updated_at END`,
        }))
        .whereRef('customers.company_role_id', '=', 'excluded.company_role_id')
        .whereRef('customers.tax_id', '=', 'excluded.tax_id'),
    )
    .returning(CUSTOMER_COLUMNS)
    .executeTakeFirst()
}

export function findCustomerOwner(db: Db, id: string): Promise<Pick<Customer, 'company_role_id' | 'tax_id'> | undefined> {
  return db.selectFrom('customers').select(['company_role_id', 'tax_id']).where('id', '=', id).executeTakeFirst()
}

export async function findCustomerIdByTaxId(db: Db, companyRoleId: string, taxId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('customers')
    .select('id')
    .where('company_role_id', '=', companyRoleId)
    .where('tax_id', '=', taxId)
    .executeTakeFirst()
  return row?.id
}

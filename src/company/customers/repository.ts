import { sql, type Selectable } from 'kysely'
import type { CustomersTable, Db } from '../../../db/types.js'
import type { CustomerInput } from './rules.js'

export type Customer = Selectable<CustomersTable>

const CUSTOMER_COLUMNS = ['id', 'company_role_id', 'name', 'tax_id', 'tax_id_type', 'email', 'phone', 'created_at', 'updated_at'] as const

/**
 * One atomic statement: inserts the role's customer, or updates the role's row with that id when it
 * has the same tax id (`updated_at` moves only when something changed). Ids are per role: another
 * role's customer with this id is another row. Returns undefined when the role's row carries another
 * tax id; it is left as it was. A concurrent insert of the same id waits for the first and then
 * takes the update path. Another id with the same tax id in the role raises customers_role_tax_id_key.
 */
export function upsertCustomer(db: Db, companyRoleId: string, id: string, input: CustomerInput): Promise<Customer | undefined> {
  return db
    .insertInto('customers')
    .values({ id, company_role_id: companyRoleId, ...input })
    .onConflict((conflict) =>
      conflict
        .columns(['company_role_id', 'id'])
        .doUpdateSet((eb) => ({
          name: eb.ref('excluded.name'),
          email: eb.ref('excluded.email'),
          phone: eb.ref('excluded.phone'),
          updated_at: sql<Date>`CASE
            WHEN (customers.name, customers.email, customers.phone) IS DISTINCT FROM (excluded.name, excluded.email, excluded.phone)
            THEN now() ELSE customers.updated_at END`,
        }))
        .whereRef('customers.tax_id', '=', 'excluded.tax_id'),
    )
    .returning(CUSTOMER_COLUMNS)
    .executeTakeFirst()
}

export async function findCustomerTaxId(db: Db, companyRoleId: string, id: string): Promise<string | undefined> {
  const row = await db.selectFrom('customers').select('tax_id').where('company_role_id', '=', companyRoleId).where('id', '=', id).executeTakeFirst()
  return row?.tax_id
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

import { sql, type Kysely } from 'kysely'

/**
 * A customer's id is its seller's own (route 11): the key becomes (company_role_id, id), so the
 * same client-chosen id under two company roles names two customers, and one tenant's ids neither
 * block nor reveal another's. A title's payer must then be a customer of the title's seller, which
 * the composite foreign key also enforces. Existing rows are kept as they are.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE titles DROP CONSTRAINT titles_payer_customer_id_fkey`.execute(db)
  await sql`ALTER TABLE customers DROP CONSTRAINT customers_pkey`.execute(db)
  await sql`ALTER TABLE customers ADD CONSTRAINT customers_pkey PRIMARY KEY (company_role_id, id)`.execute(db)
  await sql`
    ALTER TABLE titles ADD CONSTRAINT titles_payer_customer_fkey
      FOREIGN KEY (seller_company_role_id, payer_customer_id) REFERENCES customers (company_role_id, id)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE titles DROP CONSTRAINT titles_payer_customer_fkey`.execute(db)
  await sql`ALTER TABLE customers DROP CONSTRAINT customers_pkey`.execute(db)
  await sql`ALTER TABLE customers ADD CONSTRAINT customers_pkey PRIMARY KEY (id)`.execute(db)
  await sql`
    ALTER TABLE titles ADD CONSTRAINT titles_payer_customer_id_fkey
      FOREIGN KEY (payer_customer_id) REFERENCES customers (id)`.execute(db)
}

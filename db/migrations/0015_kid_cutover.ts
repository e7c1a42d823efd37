import { sql, type Kysely } from 'kysely'

/**
 * When tokens began to carry a `kid` on this deployment (issue 42, item 8): one row, written by the
 * first start of the service without JWT_KID_CUTOVER (src/db/kid-cutover.ts) and read by every
 * start after it, so that every instance and restart tries a token without `kid` for the same time.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE kid_cutover (
      one boolean PRIMARY KEY DEFAULT true CHECK (one),
      cut_over_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE kid_cutover`.execute(db)
}

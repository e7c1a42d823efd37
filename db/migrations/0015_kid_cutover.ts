import { sql, type Kysely } from 'kysely'

/**
 * When tokens began to carry a `kid` on this deployment (issue 42, item 8): one row, written when
 * this migration runs (every token issued since has a `kid`) and read by every start without
 * JWT_KID_CUTOVER (src/db/kid-cutover.ts), so that every instance and restart tries a token without
 * `kid` for the same time. Written here rather than by a start, so that no start writes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE kid_cutover (
      one boolean PRIMARY KEY DEFAULT true CHECK (one),
      cut_over_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
  await sql`INSERT INTO kid_cutover DEFAULT VALUES`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE kid_cutover`.execute(db)
}

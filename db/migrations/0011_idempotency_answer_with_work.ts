import { sql, type Kysely } from 'kysely'

/**
 * A key's row is now written with its answer, in the transaction of the work it answers
 * (src/idempotency/): there is no claimed-but-unanswered row any more, so `status` and `answer`
 * are required. Claims left by the previous way (a request still running, or dead before its
 * answer was kept) are deleted: none of them answers anything, and their work, if any, committed
 * without a kept answer.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM idempotency_keys WHERE status IS NULL OR answer IS NULL`.execute(db)
  await sql`ALTER TABLE idempotency_keys ALTER COLUMN status SET NOT NULL, ALTER COLUMN answer SET NOT NULL`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE idempotency_keys ALTER COLUMN status DROP NOT NULL, ALTER COLUMN answer DROP NOT NULL`.execute(db)
}

import type { Transaction } from 'kysely'
import type { Database, Db } from '../../db/types.js'

/**
 * Runs `work` in one transaction: the caller's when `db` already is one (a keyed request's,
 * src/idempotency/, which then commits or rolls back the work with its answer), else a new one.
 * Kysely refuses to nest `transaction()`, and inside the caller's transaction a failed statement
 * aborts the whole of it, which its end rolls back.
 */
export function inTransaction<T>(db: Db, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work)
}

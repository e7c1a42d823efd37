import { sql } from 'kysely'
import { DEMO } from '../../db/seed/ids.js'
import type { Db } from '../../db/types.js'

/**
 * The mark of a production database (migration 0010) and the demo accounts found in it: what a
 * production start checks, `migrate` records under NODE_ENV=production and `seed` reads.
 */

/** The demo users are found by their fixed ids (db/seed/ids.ts): an index lookup, and certain. */
const DEMO_USER_IDS = sql.join(Object.values(DEMO.users))

/**
 * At a production start, in one statement: marks the database production (unless it is already)
 * and returns the e-mails of the demo accounts it holds, in order.
 */
export async function markProductionAndFindDemoAccounts(db: Db): Promise<string[]> {
  const { rows } = await sql<{ email: string }>`
    WITH mark AS (
      INSERT INTO deployment_marks (name, marked_by) VALUES ('production', 'service') ON CONFLICT (name) DO NOTHING
    )
    SELECT email FROM users WHERE id IN (${DEMO_USER_IDS}) ORDER BY email`.execute(db)
  return rows.map((row) => row.email)
}

/**
 * The demo accounts of a database marked production, without marking it (none when it is not
 * marked): an instance outside NODE_ENV=production on it checks what a production start checks.
 */
export async function demoAccountsIfMarkedProduction(db: Db): Promise<string[]> {
  const { rows } = await sql<{ email: string }>`
    SELECT email FROM users
    WHERE id IN (${DEMO_USER_IDS}) AND EXISTS (SELECT 1 FROM deployment_marks WHERE name = 'production')
    ORDER BY email`.execute(db)
  return rows.map((row) => row.email)
}

/** Marks the database production (`migrate` under NODE_ENV=production); true when it was not yet. */
export async function markProduction(db: Db, by: 'migrate' | 'service'): Promise<boolean> {
  const inserted = await db
    .insertInto('deployment_marks')
    .values({ name: 'production', marked_by: by })
    .onConflict((conflict) => conflict.column('name').doNothing())
    .executeTakeFirst()
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0
}

/** The production mark, if the database has one. */
export async function productionMark(db: Db): Promise<{ markedBy: 'migrate' | 'service'; markedAt: Date } | undefined> {
  const row = await db.selectFrom('deployment_marks').select(['marked_by', 'marked_at']).where('name', '=', 'production').executeTakeFirst()
  return row && { markedBy: row.marked_by, markedAt: new Date(row.marked_at) }
}

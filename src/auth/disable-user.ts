import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/types.js'

export interface DisabledUser {
  userId: string
  /** Token families the database revoked with the user (its trigger, db/migrations/0001_identity.ts). */
  families: number
}

/**
 * Disables an active user. The database's trigger revokes every token family of the user in the
 * same statement; counted in the same transaction (its now() is the revocation's time) for the
 * audit event. Undefined when no active user has this e-mail.
 */
export function disableUser(db: Kysely<Database>, email: string): Promise<DisabledUser | undefined> {
  return db.transaction().execute(async (trx) => {
    const user = await trx
      .updateTable('users')
      .set({ is_active: false, updated_at: sql<Date>`now()` })
      .where('email', '=', email)
      .where('is_active', '=', true)
      .returning('id')
      .executeTakeFirst()
    if (!user) return undefined
    const { families } = await trx
      .selectFrom('token_families')
      .select(({ fn }) => fn.countAll<number>().as('families'))
      .where('user_id', '=', user.id)
      .where('revoked_reason', '=', 'user_disabled')
      .where('revoked_at', '=', sql<Date>`now()`)
      .executeTakeFirstOrThrow()
    return { userId: user.id, families: Number(families) }
  })
}

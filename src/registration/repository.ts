import { sql } from 'kysely'
import type { Db, User } from '../../db/types.js'
import type { DecodedUid } from './legacy-token.js'

/** A migrated account awaiting confirmation, with what its confirmation links are made of. */
export interface PendingUser {
  id: string
  legacy_id: number | null
  email: string
  password_hash: string
  last_login: Date | null
}

const PENDING_USER_COLUMNS = ['id', 'legacy_id', 'email', 'password_hash', 'last_login'] as const

function selectPendingUser(db: Db, uid: DecodedUid) {
  const query = db.selectFrom('users').select(PENDING_USER_COLUMNS).where('migration_state', '=', 'pending')
  return 'legacyId' in uid ? query.where('legacy_id', '=', uid.legacyId) : query.where('id', '=', uid.userId)
}

/** Only migrated accounts still pending: a confirmed or a disabled ordinary user is never found. */
export function findPendingUser(db: Db, uid: DecodedUid): Promise<PendingUser | undefined> {
  return selectPendingUser(db, uid).executeTakeFirst()
}

/** The same, locked until the transaction ends, so that one link confirms the account once. */
export function lockPendingUser(db: Db, uid: DecodedUid): Promise<PendingUser | undefined> {
  return selectPendingUser(db, uid).forUpdate().executeTakeFirst()
}

/** Every migrated account still awaiting confirmation (the embedded demo prints their links at start). */
export function listPendingUsers(db: Db): Promise<(PendingUser & { email: string })[]> {
  return db.selectFrom('users').select(PENDING_USER_COLUMNS).where('migration_state', '=', 'pending').orderBy('email').execute()
}

/** The user behind an e-mail, with their migration state, so the command line can say why it makes no link. */
export function findUserForLink(db: Db, email: string): Promise<(PendingUser & Pick<User, 'migration_state'>) | undefined> {
  return db
    .selectFrom('users')
    .select([...PENDING_USER_COLUMNS, 'migration_state'])
    .where('email', '=', email)
    .executeTakeFirst()
}

export interface ConfirmedUser {
  id: string
  email: string
  name: string
  last_login: Date
}

/**
 * Activates the account and sets last_login, which is part of the link's hash and so spends the
 * link; a new password, when given, replaces the migrated Django hash.
 */
export async function markConfirmed(db: Db, userId: string, newPasswordHash: string | undefined): Promise<ConfirmedUser | undefined> {
  const row = await db
    .updateTable('users')
    .set({
      is_active: true,
      migration_state: 'confirmed',
      last_login: sql<Date>`now()`,
      updated_at: sql<Date>`now()`,
      ...(newPasswordHash ? { password_hash: newPasswordHash, password_changed_at: sql<Date>`now()` } : {}),
    })
    .where('id', '=', userId)
    .where('migration_state', '=', 'pending')
    .returning(['id', 'email', 'name', 'last_login'])
    .executeTakeFirst()
  return row ? { ...row, last_login: row.last_login ?? new Date() } : undefined
}

import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/types.js'
import { normaliseEmail } from './login.js'

export interface DisabledUser {
  userId: string
  /** Token families the database revoked with the user (its trigger, db/migrations/0001_identity.ts). */
  families: number
}

/**
 * A user as the logs name one: `user_id` (login_succeeded, refresh_token_replayed…), `email_digest`
 * (login_throttled, which is written before any user is looked up), or the e-mail itself.
 */
export type UserReference = { id: string } | { email: string } | { emailDigest: string }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** src/observability/audit.ts's emailDigest: 16 lower-case hex digits. */
const EMAIL_DIGEST = /^[0-9a-f]{16}$/

/** What `text` names, or undefined when it is none of a user id, an email_digest or an e-mail. */
export function userReference(text: string): UserReference | undefined {
  const trimmed = text.trim()
  if (UUID.test(trimmed)) return { id: trimmed.toLowerCase() }
  if (EMAIL_DIGEST.test(trimmed)) return { emailDigest: trimmed }
  if (trimmed.includes('@')) return { email: normaliseEmail(trimmed) }
  return undefined
}

/**
 * The digest of the stored e-mail, as audit.ts's emailDigest makes it of the e-mail a login gave:
 * SHA-256 (unkeyed) of the trimmed, lower-cased address, its first 16 hex digits. The stored e-mail is
 * already trimmed and lower-cased (the users table's CHECK), as a login's is before it is compared.
 */
const storedEmailDigest = sql<string>`left(encode(sha256(convert_to(email, 'UTF8')), 'hex'), 16)`

/** The active users `reference` names: none, one, or (a digest shared by two e-mails) several. */
async function activeUserIds(db: Kysely<Database>, reference: UserReference): Promise<string[]> {
  let query = db.selectFrom('users').select('id').where('is_active', '=', true)
  if ('id' in reference) query = query.where('id', '=', reference.id)
  else if ('email' in reference) query = query.where('email', '=', reference.email)
  else query = query.where(storedEmailDigest, '=', reference.emailDigest)
  return (await query.execute()).map((row) => row.id)
}

export type DisableOutcome = { disabled: DisabledUser } | { matches: 0 } | { matches: number; userIds: string[] }

/**
 * Disables the active user `reference` names. The database's trigger revokes every token family of
 * the user in the same statement; counted in the same transaction (its now() is the revocation's
 * time) for the audit event. Nothing is disabled unless exactly one active user matches.
 */
export function disableUser(db: Kysely<Database>, reference: UserReference): Promise<DisableOutcome> {
  return db.transaction().execute(async (trx) => {
    const ids = await activeUserIds(trx, reference)
    if (ids.length !== 1) return ids.length === 0 ? { matches: 0 } : { matches: ids.length, userIds: ids }
    const user = await trx
      .updateTable('users')
      .set({ is_active: false, updated_at: sql<Date>`now()` })
      .where('id', '=', ids[0]!)
      .where('is_active', '=', true)
      .returning('id')
      .executeTakeFirst()
    if (!user) return { matches: 0 }
    const { families } = await trx
      .selectFrom('token_families')
      .select(({ fn }) => fn.countAll<number>().as('families'))
      .where('user_id', '=', user.id)
      .where('revoked_reason', '=', 'user_disabled')
      .where('revoked_at', '=', sql<Date>`now()`)
      .executeTakeFirstOrThrow()
    return { disabled: { userId: user.id, families: Number(families) } }
  })
}

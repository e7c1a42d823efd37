import { CONFIRMATION_PATH, confirmationPath } from '../../src/registration/confirmation.js'
import { encodeUid, makeToken, type LinkSubject } from '../../src/registration/legacy-token.js'
import { findUserForLink, type PendingUser } from '../../src/registration/repository.js'
import { testDatabase } from '../helpers/database.js'
import { TEST_SECRETS } from '../helpers/secrets.js'

export const DAY_SECONDS = 86_400
export const secondsAgo = (seconds: number): Date => new Date(Date.now() - seconds * 1000)

/** A user as stored now, with what links are made of. */
export async function linkUser(email: string): Promise<PendingUser> {
  const { db } = await testDatabase()
  const user = await findUserForLink(db, email)
  if (!user) throw new Error(`no demo user ${email}`)
  return user
}

/** The link the command line would print, for any user (the route must still refuse the wrong ones). */
export async function linkFor(email: string, options: { secret?: string; at?: Date } = {}): Promise<string> {
  return confirmationPath(await linkUser(email), options.secret ?? TEST_SECRETS.LEGACY_SECRET_KEY, options.at)
}

/** A link whose parts are chosen freely, to forge what the route must refuse. */
export function rawLink(uid: string | number, subject: LinkSubject, secret: string = TEST_SECRETS.LEGACY_SECRET_KEY): string {
  return `${CONFIRMATION_PATH}/${encodeUid(uid)}/${makeToken(subject, secret)}`
}

export async function storedUser(id: string) {
  const { db } = await testDatabase()
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
}

export async function tokenFamilies(userId: string): Promise<number> {
  const { db } = await testDatabase()
  const rows = await db.selectFrom('token_families').select('id').where('user_id', '=', userId).execute()
  return rows.length
}

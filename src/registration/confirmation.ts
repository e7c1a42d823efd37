import { hashPassword } from '../auth/passwords.js'
import { startSession, type TokenPair } from '../tokens/sessions.js'
import type { TokenSigner } from '../tokens/tokens.js'
import type { Config } from '../config.js'
import type { Db } from '../../db/types.js'
import { inTransaction } from '../db/transaction.js'
import { problem } from '../lib/problem.js'
import { checkToken, decodeUid, encodeUid, makeToken, type LinkSubject } from './legacy-token.js'
import { findPendingUser, lockPendingUser, markConfirmed, type ConfirmedUser, type PendingUser } from './repository.js'

export const CONFIRMATION_PATH = '/api/registration/v1/confirm-migration-account'

/** One answer for every bad link, so that nobody learns which users exist or which part was wrong. */
const invalidLink = () => problem(400, 'invalid_link', 'The confirmation link is invalid or has expired.')

/** The old platform's primary key was the integer id; accounts without one are named by their UUID. */
const linkSubject = (user: PendingUser): LinkSubject => ({
  hashId: String(user.legacy_id ?? user.id),
  passwordHash: user.password_hash,
  lastLogin: user.last_login,
  email: user.email,
})

/** The path of a confirmation link for a pending account, as the old platform made them. */
export function confirmationPath(user: PendingUser, secret: string, at: Date = new Date()): string {
  return `${CONFIRMATION_PATH}/${encodeUid(user.legacy_id ?? user.id)}/${makeToken(linkSubject(user), secret, at)}`
}

type LinkSettings = Pick<Config, 'legacySecretKey' | 'legacySecretKeyFallbacks' | 'linkTtl'>

const linkIsValid = (user: PendingUser | undefined, token: string, settings: LinkSettings): user is PendingUser =>
  user !== undefined &&
  checkToken(linkSubject(user), token, {
    secrets: [settings.legacySecretKey, ...settings.legacySecretKeyFallbacks],
    ttlSeconds: settings.linkTtl,
  })

export interface Confirmation {
  user: ConfirmedUser
  tokens: TokenPair
}

/**
 * Route 10. The link is checked once without a lock, so a bad link costs no password hashing, then
 * again on the locked row: of two requests with the same link, the second sees the new last_login
 * and fails. Activation and the first session commit together.
 */
export async function confirmMigratedAccount(
  db: Db,
  signer: TokenSigner,
  config: LinkSettings & Pick<Config, 'refreshAbsoluteTtl'>,
  link: { uidb64: string; token: string },
  newPassword: string | undefined,
): Promise<Confirmation> {
  const uid = decodeUid(link.uidb64)
  if (!uid || !linkIsValid(await findPendingUser(db, uid), link.token, config)) throw invalidLink()
  const newPasswordHash = newPassword === undefined ? undefined : await hashPassword(newPassword)
  return inTransaction(db, async (trx) => {
    const pending = await lockPendingUser(trx, uid)
    if (!linkIsValid(pending, link.token, config)) throw invalidLink()
    const user = await markConfirmed(trx, pending.id, newPasswordHash)
    if (!user) throw invalidLink()
    const tokens = await startSession(trx, signer, user.id, config.refreshAbsoluteTtl)
    return { user, tokens }
  })
}

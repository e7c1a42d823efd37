import type { Db } from '../db/types.js'
import { problem } from '../lib/problem.js'
import type { LoginThrottle } from './login-throttle.js'
import { hashPassword, spendVerificationTime, verifyPassword } from './passwords.js'
import { findUserByEmail, recordLogin, type LoginCandidate } from './repository.js'

export const normaliseEmail = (email: string): string => email.trim().toLowerCase()

const noActiveAccount = () =>
  problem(401, 'no_active_account', 'No active account found with the given credentials')

/** Whether a user may log in at all: active, and not a migrated account awaiting confirmation. */
export const canLogIn = (user: Pick<LoginCandidate, 'is_active' | 'migration_state'>): boolean =>
  user.is_active && user.migration_state !== 'pending'

export interface LoggedInUser {
  id: string
  email: string
  name: string
  last_login: Date
}

/**
 * Checks e-mail and password (§2 route 1). Every failure is the same 401 and costs one password
 * verification, so that neither the answer nor its time tells whether the e-mail exists.
 */
export async function authenticate(
  db: Db,
  throttle: LoginThrottle,
  clientIp: string,
  rawEmail: string,
  password: string,
): Promise<LoggedInUser> {
  const email = normaliseEmail(rawEmail)
  await throttle.assertAllowed(clientIp, email)
  const user = await findUserByEmail(db, email)
  const verdict = user ? await verifyPassword(user.password_hash, password) : undefined
  if (!user) await spendVerificationTime(password)
  if (!user || !verdict?.valid || !canLogIn(user)) {
    await throttle.recordFailure(clientIp, email)
    throw noActiveAccount()
  }
  await throttle.recordSuccess(clientIp, email)
  const upgradedHash = verdict.needsRehash ? await hashPassword(password) : undefined
  const lastLogin = await recordLogin(db, user.id, upgradedHash)
  return { id: user.id, email: user.email, name: user.name, last_login: lastLogin }
}

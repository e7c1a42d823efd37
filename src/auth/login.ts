import { setTimeout } from 'node:timers/promises'
import type { Db } from '../../db/types.js'
import { problem } from '../lib/problem.js'
import type { LoginThrottle } from './throttle/login-throttle.js'
import { hashPassword, isHashingBusy, spendVerificationTime, verifyPassword, type VerifyResult } from './passwords.js'
import { findUserByEmail, type LoginCandidate } from './repository.js'
import { startLoginSession, type TokenPair } from '../tokens/sessions.js'
import type { TokenSigner } from '../tokens/tokens.js'

export const normaliseEmail = (email: string): string => email.trim().toLowerCase()

const noActiveAccount = () => problem(401, 'no_active_account', 'No active account found with the given credentials')

const isNoActiveAccount = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === 'no_active_account'

/** Whether a user may log in at all: active, and not a migrated account awaiting confirmation. */
export const canLogIn = (user: Pick<LoginCandidate, 'is_active' | 'migration_state'>): boolean => user.is_active && user.migration_state !== 'pending'

export interface LoggedInUser {
  id: string
  email: string
  name: string
  last_login: Date
}

/** A user whose password was just verified, and a stronger hash of it to store, if theirs is weaker. */
interface VerifiedUser {
  user: LoginCandidate
  upgradedHash: string | undefined
}

/**
 * Checks e-mail and password (§2 route 1). The attempt is counted before its password is checked,
 * so that concurrent guesses cannot all pass the limit, and its count settled before any answer, so
 * that the attempts waiting for it go on at once. Every failure is the same 401 and costs one
 * password verification (an unknown e-mail too, so it takes its place in the hashing bound); logIn
 * evens out the time.
 */
async function authenticate(db: Db, throttle: LoginThrottle, clientIp: string, email: string, password: string): Promise<VerifiedUser> {
  const reservation = await throttle.reserve(clientIp, email)
  let user: LoginCandidate | undefined
  let verdict: VerifyResult | undefined
  try {
    user = await findUserByEmail(db, email)
    if (user) verdict = await verifyPassword(user.password_hash, password, reservation.admission)
    else await spendVerificationTime(password, reservation.admission)
  } catch (error) {
    // Nothing was checked (busy hashing, database down): the attempt does not count.
    await reservation.cancelled()
    throw error
  }
  if (!user || !verdict?.valid || !canLogIn(user)) {
    await reservation.failed()
    throw noActiveAccount()
  }
  await reservation.succeeded()
  return { user, upgradedHash: verdict.needsRehash ? await strongerHash(password) : undefined }
}

/** The rehash of a weaker stored hash; skipped while hashing is busy, as the next login makes it. */
async function strongerHash(password: string): Promise<string | undefined> {
  try {
    return await hashPassword(password)
  } catch (error) {
    if (isHashingBusy(error)) return undefined
    throw error
  }
}

export interface Login<Read = undefined> {
  user: LoggedInUser
  tokens: TokenPair
  /** What `readFirst` read. */
  read: Read
}

/**
 * Routes 1 and 2: checks the credentials, then records the login and starts its token family in
 * one statement, which refuses a user disabled since the check (the same 401).
 *
 * A failure is answered no sooner than `failureFloorMs` after the attempt began: verifying a
 * migrated Django hash takes up to ten times our argon2id, so without the floor a wrong password's
 * time would list the migrated accounts (§2: the same time whatever the stored hash). The wait is
 * idle, not hashing, so it costs neither CPU nor a place in the hashing queue.
 */
export async function logIn<Read = undefined>(
  db: Db,
  signer: TokenSigner,
  throttle: LoginThrottle,
  attempt: {
    clientIp: string
    email: string
    password: string
    absoluteTtlSeconds: number
    failureFloorMs: number
    onFloorExceeded?(elapsedMs: number): void
    /**
     * What the answer needs besides the session (route 2's companies), read once the password is
     * checked and before the session is written: its failure (a 503) then leaves nothing written.
     */
    readFirst?(userId: string): Promise<Read>
  },
): Promise<Login<Read>> {
  const started = performance.now()
  try {
    const { user, upgradedHash } = await authenticate(db, throttle, attempt.clientIp, normaliseEmail(attempt.email), attempt.password)
    const read = (await attempt.readFirst?.(user.id)) as Read
    const session = await startLoginSession(db, signer, { userId: user.id, upgradedHash }, attempt.absoluteTtlSeconds)
    if (!session) throw noActiveAccount()
    return { user: { id: user.id, email: user.email, name: user.name, last_login: session.lastLogin }, tokens: session.tokens, read }
  } catch (error) {
    if (isNoActiveAccount(error)) {
      const elapsedMs = performance.now() - started
      if (elapsedMs > attempt.failureFloorMs) attempt.onFloorExceeded?.(elapsedMs)
      else await setTimeout(attempt.failureFloorMs - elapsedMs)
    }
    throw error
  }
}

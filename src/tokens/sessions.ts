import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database, Db } from '../../db/types.js'
import { inTransaction } from '../db/transaction.js'
import {
  createLoginSession,
  createSession,
  findRetriedSuccessor,
  isCurrentRefreshToken,
  revokeFamilyOnReuse,
  spendAndReplaceRefreshToken,
} from './repository.js'
import { newJti, tokenNotValid, type RefreshTerm, type TokenSigner } from './tokens.js'

export interface TokenPair {
  access: string
  refresh: string
}

/**
 * An access token and a refresh token stored under `jti` with `term`, neither outliving the
 * family's end (§2: a family never outlives REFRESH_ABSOLUTE_TTL, nor then do its access tokens).
 */
const signPair = (signer: TokenSigner, userId: string, familyId: string, jti: string, term: RefreshTerm, familyEndsAt: Date): TokenPair => ({
  access: signer.signAccess(userId, familyId, familyEndsAt).token,
  refresh: signer.signRefreshStored(jti, userId, familyId, term).token,
})

/** The ids and term of a new family's first refresh token, chosen before the statement that stores it. */
function newFamily(signer: TokenSigner): { familyId: string; jti: string } & RefreshTerm {
  return { familyId: randomUUID(), jti: newJti(), ...signer.refreshTerm() }
}

/** A new token family with its first refresh token (one statement), and an access token. */
export async function startSession(db: Db, signer: TokenSigner, userId: string, absoluteTtlSeconds: number): Promise<TokenPair> {
  const { familyId, jti, issuedAt, expiresAt } = newFamily(signer)
  const stored = await createSession(db, { userId, familyId, jti, absoluteTtlSeconds, expiresAt })
  return signPair(signer, userId, familyId, jti, { issuedAt, expiresAt: stored.expiresAt }, stored.familyEndsAt)
}

/** What a login started: its tokens, and the last_login it recorded. */
export interface StartedLogin {
  tokens: TokenPair
  lastLogin: Date
}

/**
 * A login's session: records the login (and a fresh password hash, if any) and starts the token
 * family in one statement. Undefined when the user may no longer log in (disabled meanwhile).
 */
export async function startLoginSession(
  db: Db,
  signer: TokenSigner,
  login: { userId: string; upgradedHash: string | undefined },
  absoluteTtlSeconds: number,
): Promise<StartedLogin | undefined> {
  const { familyId, jti, issuedAt, expiresAt } = newFamily(signer)
  const { userId, upgradedHash } = login
  // In a transaction: a 503 at HANDLER_TIMEOUT before its COMMIT closes it, so the login leaves nothing behind (issue 42, item 10).
  const session = { userId, familyId, jti, absoluteTtlSeconds, expiresAt, newPasswordHash: upgradedHash ?? null }
  const stored = await inTransaction(db, (trx) => createLoginSession(trx, session))
  if (!stored) return undefined
  const tokens = signPair(signer, userId, familyId, jti, { issuedAt, expiresAt: stored.expiresAt }, stored.familyEndsAt)
  return { tokens, lastLogin: stored.lastLogin }
}

/** What a refresh told apart, for the audit events and metrics. */
export interface RefreshObserver {
  /** A spent token presented again: its family was revoked. */
  replayed?(userId: string, familyId: string): void
  /** A spent token presented again within the grace: its successor was issued again. */
  retried?(userId: string, familyId: string): void
}

type RefreshClaims = NonNullable<ReturnType<TokenSigner['verify']>>

/** What a rotation's transaction decided: the pair to answer (a retry's again), or a refusal and whether it revoked the family. */
type RotationOutcome = { tokens: TokenPair; retried: boolean } | { tokens?: undefined; revoked: boolean }

async function rotateWithin(db: Db, signer: TokenSigner, claims: RefreshClaims, graceSeconds: number): Promise<RotationOutcome> {
  const nextJti = newJti()
  const { issuedAt, expiresAt: wantedExpiry } = signer.refreshTerm()
  const rotation = { jti: claims.jti, familyId: claims.fid, userId: claims.user_id, nextJti, issuedAt, expiresAt: wantedExpiry }
  const stored = await spendAndReplaceRefreshToken(db, rotation)
  if (stored) {
    const tokens = signPair(signer, claims.user_id, claims.fid, nextJti, { issuedAt, expiresAt: stored.expiresAt }, stored.familyEndsAt)
    return { tokens, retried: false }
  }
  const spent = { jti: claims.jti, familyId: claims.fid, userId: claims.user_id, graceSeconds }
  const successor = await findRetriedSuccessor(db, spent)
  if (successor) {
    const term = { issuedAt: Math.floor(successor.issuedAt.getTime() / 1000), expiresAt: successor.expiresAt }
    return { tokens: signPair(signer, claims.user_id, claims.fid, successor.jti, term, successor.familyEndsAt), retried: true }
  }
  return { revoked: await revokeFamilyOnReuse(db, claims.jti, claims.fid) }
}

/**
 * Spends a refresh token and issues the next pair of its family (RFC 9700 §4.14): one statement
 * when all is well. A token that was already spent is a retry when it was rotated less than
 * `graceSeconds` ago and its successor is still unused: the answer is that same successor (signed
 * again from its stored claims, so byte for byte the same) and a fresh access token. Otherwise it
 * is a replay: the whole family is revoked, and the caller gets a 401 like for any other refusal.
 * One transaction: a 503 at HANDLER_TIMEOUT before its COMMIT leaves nothing rotated or revoked.
 */
export async function rotateRefreshToken(
  db: Kysely<Database>,
  signer: TokenSigner,
  refreshToken: string,
  graceSeconds: number,
  observer: RefreshObserver = {},
): Promise<TokenPair> {
  const claims = signer.verify(refreshToken, 'refresh')
  if (!claims) throw tokenNotValid()
  const outcome = await inTransaction(db, (trx) => rotateWithin(trx, signer, claims, graceSeconds))
  if (outcome.tokens) {
    if (outcome.retried) observer.retried?.(claims.user_id, claims.fid)
    return outcome.tokens
  }
  if (outcome.revoked) observer.replayed?.(claims.user_id, claims.fid)
  throw tokenNotValid()
}

/**
 * Whether the session an answer started (its `refresh`) is as that answer left it: not refreshed
 * since, nor revoked. Route 10 replays its answer only then, so that a replay never yields a token
 * that outlives the first answer's (a spent first token would get the owner's successor within the grace).
 */
export async function sessionAsAnswered(db: Db, signer: TokenSigner, answerBody: string): Promise<boolean> {
  const { refresh } = JSON.parse(answerBody) as { refresh?: unknown }
  const claims = typeof refresh === 'string' ? signer.verify(refresh, 'refresh') : undefined
  return claims ? isCurrentRefreshToken(db, claims.fid, claims.jti) : false
}

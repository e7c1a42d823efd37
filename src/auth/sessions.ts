import type { Kysely } from 'kysely'
import type { Database, Db } from '../db/types.js'
import { problem } from '../lib/problem.js'
import { randomUUID } from 'node:crypto'
import { createSession, revokeFamilyOnReuse, spendAndReplaceRefreshToken } from './repository.js'
import { newJti, type TokenSigner } from './tokens.js'

export interface TokenPair {
  access: string
  refresh: string
}

export const tokenNotValid = () =>
  problem(401, 'token_not_valid', 'Token is invalid or expired')

export interface SessionLifetimes {
  /** A refresh token's own lifetime. */
  ttlSeconds: number
  /** How long the family may be refreshed from its login. */
  absoluteTtlSeconds: number
}

/** A login: a new token family with its first refresh token (one statement), and an access token. */
export async function startSession(db: Db, signer: TokenSigner, userId: string, lifetimes: SessionLifetimes): Promise<TokenPair> {
  const familyId = randomUUID()
  const jti = newJti()
  const expiresAt = await createSession(db, { userId, familyId, jti, ...lifetimes })
  return {
    access: signer.signAccess(userId, familyId).token,
    refresh: signer.signRefreshStored(jti, userId, familyId, expiresAt).token,
  }
}

/**
 * Spends a refresh token and issues the next pair of its family (RFC 9700 §4.14): one statement
 * when all is well. A token that was already spent is a replay: the whole family is revoked, and
 * the caller gets a 401 like for any other refusal.
 */
export async function rotateRefreshToken(
  db: Kysely<Database>,
  signer: TokenSigner,
  refreshToken: string,
  ttlSeconds: number,
): Promise<TokenPair> {
  const claims = signer.verify(refreshToken, 'refresh')
  if (!claims) throw tokenNotValid()
  const nextJti = newJti()
  const rotation = { jti: claims.jti, familyId: claims.fid, userId: claims.user_id, nextJti, ttlSeconds }
  const expiresAt = await spendAndReplaceRefreshToken(db, rotation)
  if (!expiresAt) {
    await revokeFamilyOnReuse(db, claims.jti, claims.fid)
    throw tokenNotValid()
  }
  return {
    access: signer.signAccess(claims.user_id, claims.fid).token,
    refresh: signer.signRefreshStored(nextJti, claims.user_id, claims.fid, expiresAt).token,
  }
}

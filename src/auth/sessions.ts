import type { Kysely } from 'kysely'
import type { Database, Db } from '../db/types.js'
import { problem } from '../lib/problem.js'
import {
  createTokenFamily,
  lockFamily,
  refreshTokenExists,
  revokeFamily,
  spendRefreshToken,
  storeRefreshToken,
} from './repository.js'
import type { TokenSigner } from './tokens.js'

export interface TokenPair {
  access: string
  refresh: string
}

export const tokenNotValid = () =>
  problem(401, 'token_not_valid', 'Token is invalid or expired', { headers: { 'www-authenticate': 'Bearer realm="api"' } })

async function issueInFamily(db: Db, signer: TokenSigner, userId: string, familyId: string, familyExpiresAt: Date): Promise<TokenPair> {
  const refresh = signer.signRefresh(userId, familyId, familyExpiresAt)
  await storeRefreshToken(db, refresh.jti, familyId, refresh.expiresAt)
  return { access: signer.signAccess(userId, familyId).token, refresh: refresh.token }
}

/** A login: a new token family, its first refresh token and an access token. */
export async function startSession(db: Db, signer: TokenSigner, userId: string, absoluteTtlSeconds: number): Promise<TokenPair> {
  const family = await createTokenFamily(db, userId, absoluteTtlSeconds)
  return issueInFamily(db, signer, userId, family.id, family.absoluteExpiresAt)
}

type RotationOutcome = { ok: true; tokens: TokenPair } | { ok: false }

/**
 * Spends a refresh token and issues the next pair of its family (RFC 9700 §4.14). A token that was
 * already spent is a replay: the whole family is revoked, and the revocation commits even though
 * the caller gets a 401.
 */
export async function rotateRefreshToken(db: Kysely<Database>, signer: TokenSigner, refreshToken: string): Promise<TokenPair> {
  const claims = signer.verify(refreshToken, 'refresh')
  if (!claims) throw tokenNotValid()
  const outcome = await db.transaction().execute(async (trx): Promise<RotationOutcome> => {
    const family = await lockFamily(trx, claims.fid, claims.user_id)
    if (!family || family.revoked_at || family.expired || !family.user_active) return { ok: false }
    const spent = await spendRefreshToken(trx, claims.jti, claims.fid)
    if (!spent) {
      if (await refreshTokenExists(trx, claims.jti, claims.fid)) await revokeFamily(trx, claims.fid, 'reuse')
      return { ok: false }
    }
    return { ok: true, tokens: await issueInFamily(trx, signer, claims.user_id, claims.fid, family.absolute_expires_at) }
  })
  if (!outcome.ok) throw tokenNotValid()
  return outcome.tokens
}

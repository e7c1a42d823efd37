import { sql } from 'kysely'
import type { Db, TokenFamiliesTable } from '../db/types.js'

export interface LoginCandidate {
  id: string
  email: string
  name: string
  password_hash: string
  is_active: boolean
  migration_state: 'pending' | 'confirmed' | null
}

export function findUserByEmail(db: Db, email: string): Promise<LoginCandidate | undefined> {
  return db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'password_hash', 'is_active', 'migration_state'])
    .where('email', '=', email)
    .executeTakeFirst()
}

/** Sets last_login (SimpleJWT's update_last_login) and, when given, replaces the stored hash. */
export async function recordLogin(db: Db, userId: string, newPasswordHash?: string): Promise<Date> {
  const row = await db
    .updateTable('users')
    .set({
      last_login: sql<Date>`now()`,
      updated_at: sql<Date>`now()`,
      ...(newPasswordHash ? { password_hash: newPasswordHash } : {}),
    })
    .where('id', '=', userId)
    .returning('last_login')
    .executeTakeFirstOrThrow()
  return row.last_login ?? new Date()
}

export interface AuthenticatedUser {
  id: string
  email: string
  name: string
}

/**
 * The user behind an access token, if still active and the token's family not revoked: one indexed
 * query on every authenticated request (§2).
 */
export function findActiveUserForToken(db: Db, userId: string, familyId: string): Promise<AuthenticatedUser | undefined> {
  return db
    .selectFrom('users')
    .innerJoin('token_families', 'token_families.user_id', 'users.id')
    .select(['users.id', 'users.email', 'users.name'])
    .where('users.id', '=', userId)
    .where('users.is_active', '=', true)
    .where('token_families.id', '=', familyId)
    .where('token_families.revoked_at', 'is', null)
    .executeTakeFirst()
}

export async function createTokenFamily(db: Db, userId: string, absoluteTtlSeconds: number): Promise<{ id: string; absoluteExpiresAt: Date }> {
  const row = await db
    .insertInto('token_families')
    .values({ user_id: userId, absolute_expires_at: sql<Date>`now() + make_interval(secs => ${absoluteTtlSeconds})` })
    .returning(['id', 'absolute_expires_at'])
    .executeTakeFirstOrThrow()
  return { id: row.id, absoluteExpiresAt: row.absolute_expires_at }
}

export async function storeRefreshToken(db: Db, jti: string, familyId: string, expiresAt: Date): Promise<void> {
  await db.insertInto('refresh_tokens').values({ jti, family_id: familyId, expires_at: expiresAt }).execute()
}

/**
 * Marks a refresh token spent, atomically: of two requests presenting the same token, exactly one
 * gets its family back. Undefined when the token is unknown or already spent.
 */
export function spendRefreshToken(db: Db, jti: string, familyId: string): Promise<{ family_id: string } | undefined> {
  return db
    .updateTable('refresh_tokens')
    .set({ spent_at: sql<Date>`now()` })
    .where('jti', '=', jti)
    .where('family_id', '=', familyId)
    .where('spent_at', 'is', null)
    .returning('family_id')
    .executeTakeFirst()
}

export async function refreshTokenExists(db: Db, jti: string, familyId: string): Promise<boolean> {
  const row = await db
    .selectFrom('refresh_tokens')
    .select('jti')
    .where('jti', '=', jti)
    .where('family_id', '=', familyId)
    .executeTakeFirst()
  return row !== undefined
}

export interface FamilyState {
  absolute_expires_at: Date
  revoked_at: Date | null
  user_active: boolean
  expired: boolean
}

/** The family (locked for the rest of the transaction) and whether its user may still refresh. */
export function lockFamily(db: Db, familyId: string, userId: string): Promise<FamilyState | undefined> {
  return db
    .selectFrom('token_families')
    .innerJoin('users', 'users.id', 'token_families.user_id')
    .select([
      'token_families.absolute_expires_at',
      'token_families.revoked_at',
      'users.is_active as user_active',
      sql<boolean>`token_families.absolute_expires_at <= now()`.as('expired'),
    ])
    .where('token_families.id', '=', familyId)
    .where('token_families.user_id', '=', userId)
    .forUpdate('token_families')
    .executeTakeFirst()
}

export async function revokeFamily(db: Db, familyId: string, reason: NonNullable<TokenFamiliesTable['revoked_reason']>): Promise<void> {
  await db
    .updateTable('token_families')
    .set({ revoked_at: sql<Date>`now()`, revoked_reason: reason })
    .where('id', '=', familyId)
    .where('revoked_at', 'is', null)
    .execute()
}

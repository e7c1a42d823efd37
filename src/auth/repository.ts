import { sql } from 'kysely'
import type { Db } from '../db/types.js'

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
 * The user behind an access token, if still active and the token's family not revoked (§2): the
 * query every authenticated request runs, which src/tenancy/principal.ts extends with a membership.
 */
export function activeUserForTokenQuery(db: Db, userId: string, familyId: string) {
  return db
    .selectFrom('users')
    .innerJoin('token_families', 'token_families.user_id', 'users.id')
    .select(['users.id', 'users.email', 'users.name'])
    .where('users.id', '=', userId)
    .where('users.is_active', '=', true)
    .where('token_families.id', '=', familyId)
    .where('token_families.revoked_at', 'is', null)
}

export function findActiveUserForToken(db: Db, userId: string, familyId: string): Promise<AuthenticatedUser | undefined> {
  return activeUserForTokenQuery(db, userId, familyId).executeTakeFirst()
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

export interface Rotation {
  jti: string
  familyId: string
  userId: string
  /** The successor's jti, made by the caller so that it can sign the token once it is stored. */
  nextJti: string
  ttlSeconds: number
}

/**
 * A refresh-token rotation in one atomic statement: spends the presented token if it is unspent
 * and its family is live (not revoked, not past its absolute expiry, its user active), and stores
 * the successor, expiring at the earlier of the TTL and the family's end. Of two requests
 * presenting the same token, the second waits on the first's row lock and then finds it spent.
 * Returns the successor's expiry, or undefined when nothing was spent.
 */
export async function spendAndReplaceRefreshToken(db: Db, rotation: Rotation): Promise<Date | undefined> {
  const { jti, familyId, userId, nextJti, ttlSeconds } = rotation
  const row = await db
    .with('spent', (qb) =>
      qb
        .updateTable('refresh_tokens')
        .set({ spent_at: sql<Date>`now()` })
        .where('jti', '=', jti)
        .where('family_id', '=', familyId)
        .where('spent_at', 'is', null)
        .where(({ exists, selectFrom }) =>
          exists(
            selectFrom('token_families')
              .innerJoin('users', 'users.id', 'token_families.user_id')
              .select(sql.lit(1).as('live'))
              .where('token_families.id', '=', familyId)
              .where('token_families.user_id', '=', userId)
              .where('token_families.revoked_at', 'is', null)
              .where('token_families.absolute_expires_at', '>', sql<Date>`now()`)
              .where('users.is_active', '=', true),
          ),
        )
        .returning('family_id'),
    )
    .insertInto('refresh_tokens')
    .columns(['jti', 'family_id', 'expires_at'])
    .expression((eb) =>
      eb
        .selectFrom('spent')
        .innerJoin('token_families', 'token_families.id', 'spent.family_id')
        .select([
          eb.val(nextJti).as('jti'),
          'spent.family_id',
          sql<Date>`least(now() + make_interval(secs => ${ttlSeconds}), token_families.absolute_expires_at)`.as('expires_at'),
        ]),
    )
    .returning('expires_at')
    .executeTakeFirst()
  return row?.expires_at
}

/**
 * A spent refresh token presented again is theft or a bug (RFC 9700 §4.14): its whole family is
 * revoked. Nothing happens for an unknown token, or one that was never spent.
 */
export async function revokeFamilyOnReuse(db: Db, jti: string, familyId: string): Promise<void> {
  await db
    .updateTable('token_families')
    .set({ revoked_at: sql<Date>`now()`, revoked_reason: 'reuse' })
    .where('id', '=', familyId)
    .where('revoked_at', 'is', null)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('refresh_tokens')
          .select(sql.lit(1).as('spent'))
          .where('refresh_tokens.jti', '=', jti)
          .where('refresh_tokens.family_id', '=', familyId)
          .where('refresh_tokens.spent_at', 'is not', null),
      ),
    )
    .execute()
}

import { sql } from 'kysely'
import { Precompiled } from '../db/precompiled.js'
import type { Db } from '../db/types.js'

export interface LoginCandidate {
  id: string
  email: string
  name: string
  password_hash: string
  is_active: boolean
  migration_state: 'pending' | 'confirmed' | null
}

const userByEmailStatement = new Precompiled((db, p: { email: string }) =>
  db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'password_hash', 'is_active', 'migration_state'])
    .where('email', '=', p.email),
)

export function findUserByEmail(db: Db, email: string): Promise<LoginCandidate | undefined> {
  return userByEmailStatement.first(db, { email })
}

export interface AuthenticatedUser {
  id: string
  email: string
  name: string
}

export interface NewSession {
  userId: string
  /** The new family's id and its first refresh token's jti, made by the caller so that it can sign. */
  familyId: string
  jti: string
  absoluteTtlSeconds: number
  /** The token's own expiry (TokenSigner.refreshTerm); the family's end caps it. */
  expiresAt: Date
}

/**
 * The row of the first refresh token of the statement's new `family` (its CTE), expiring at the
 * earlier of its own expiry and the family's absolute end: the source of both session statements'
 * `INSERT INTO refresh_tokens (jti, family_id, expires_at)`.
 */
const firstRefreshTokenOfFamily = (p: Pick<NewSession, 'jti' | 'expiresAt'>) =>
  sql`SELECT ${p.jti}, family.id, least(${p.expiresAt}::timestamptz, family.absolute_expires_at) FROM family`

/**
 * A login's token family and its first refresh token in one statement; the token expires at the
 * earlier of its TTL and the family's absolute end. Returns the token's expiry.
 */
const createSessionStatement = new Precompiled((db, p: NewSession) =>
  db
    .with('family', (qb) =>
      qb
        .insertInto('token_families')
        .values({
          id: p.familyId,
          user_id: p.userId,
          absolute_expires_at: sql<Date>`now() + make_interval(secs => ${p.absoluteTtlSeconds})`,
        })
        .returning(['id', 'absolute_expires_at']),
    )
    .insertInto('refresh_tokens')
    .columns(['jti', 'family_id', 'expires_at'])
    .expression(firstRefreshTokenOfFamily(p))
    .returning('expires_at'),
)

export async function createSession(db: Db, session: NewSession): Promise<Date> {
  const row = await createSessionStatement.first(db, session)
  if (!row) throw new Error('createSession: nothing inserted')
  return row.expires_at
}

export interface LoginSession extends NewSession {
  /** A stronger hash of the password just verified, to store in place of the old one; null to keep it. */
  newPasswordHash: string | null
}

/**
 * A login's writes in one statement: last_login (SimpleJWT's update_last_login) and, when given, a
 * fresh password hash; then the session, as in `createSession`. The user row is updated only if
 * the user may still log in (`canLogIn` in src/auth/login.ts, checked again here against a
 * concurrent change), and the session is made from that row: a user disabled after the password
 * check gets no session (the disabling waits for this row lock, or this statement sees it
 * committed and matches no row).
 */
const loginSessionStatement = new Precompiled((db, p: LoginSession) =>
  db
    .with('login', (qb) =>
      qb
        .updateTable('users')
        .set((eb) => ({
          last_login: sql<Date>`now()`,
          updated_at: sql<Date>`now()`,
          password_hash: eb.fn.coalesce(eb.val(p.newPasswordHash), eb.ref('password_hash')),
        }))
        .where('id', '=', p.userId)
        .where('is_active', '=', true)
        .where(sql<boolean>`migration_state IS DISTINCT FROM 'pending'`)
        .returning(['id', 'last_login']),
    )
    .with('family', (qb) =>
      qb
        .insertInto('token_families')
        .columns(['id', 'user_id', 'absolute_expires_at'])
        .expression((eb) =>
          eb
            .selectFrom('login')
            .select([
              sql<string>`${p.familyId}::uuid`.as('id'),
              'login.id as user_id',
              sql<Date>`now() + make_interval(secs => ${p.absoluteTtlSeconds})`.as('absolute_expires_at'),
            ]),
        )
        .returning(['id', 'absolute_expires_at']),
    )
    .insertInto('refresh_tokens')
    .columns(['jti', 'family_id', 'expires_at'])
    .expression(firstRefreshTokenOfFamily(p))
    .returning((eb) => ['expires_at', eb.selectFrom('login').select('login.last_login').as('last_login')]),
)

/** The token's expiry and the new last_login; undefined when the user may no longer log in. */
export async function createLoginSession(db: Db, session: LoginSession): Promise<{ expiresAt: Date; lastLogin: Date } | undefined> {
  const row = await loginSessionStatement.first(db, session)
  if (!row) return undefined
  return { expiresAt: row.expires_at, lastLogin: row.last_login ?? new Date() }
}

export interface Rotation {
  jti: string
  familyId: string
  userId: string
  /** The successor's jti, made by the caller so that it can sign the token once it is stored. */
  nextJti: string
  /** The successor's own expiry (TokenSigner.refreshTerm); the family's end caps it. */
  expiresAt: Date
}

/**
 * A refresh-token rotation in one atomic statement: spends the presented token if it is unspent
 * and its family is live (not revoked, not past its absolute expiry, its user active), and stores
 * the successor, expiring at the earlier of its own expiry and the family's end. Of two requests
 * presenting the same token, the second waits on the first's row lock and then finds it spent.
 * Returns the successor's expiry, or undefined when nothing was spent.
 */
const rotationStatement = new Precompiled((db, { jti, familyId, userId, nextJti, expiresAt }: Rotation) =>
  db
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
          sql<Date>`least(${expiresAt}::timestamptz, token_families.absolute_expires_at)`.as('expires_at'),
        ]),
    )
    .returning('expires_at'),
)

export async function spendAndReplaceRefreshToken(db: Db, rotation: Rotation): Promise<Date | undefined> {
  const row = await rotationStatement.first(db, rotation)
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

import { sql, type ExpressionBuilder } from 'kysely'
import { Precompiled } from '../db/precompiled.js'
import type { Database, Db } from '../../db/types.js'

export interface NewSession {
  userId: string
  /** The new family's id and its first refresh token's jti, made by the caller so that it can sign. */
  familyId: string
  jti: string
  absoluteTtlSeconds: number
  /** The token's own expiry (TokenSigner.refreshTerm); the family's end caps it. */
  expiresAt: Date
}

/** A refresh token's expiry, in a statement that has its family's row: its own, capped at the family's absolute end. */
const cappedAtFamilyEnd = (expiresAt: Date, family = 'token_families') =>
  sql<Date>`least(${expiresAt}::timestamptz, ${sql.ref(`${family}.absolute_expires_at`)})`

/** What a statement that issues tokens learns of their family: the refresh token's expiry, and the family's end (which caps the access token's too). */
export interface StoredTerm {
  expiresAt: Date
  familyEndsAt: Date
}

/**
 * A token family and its first refresh token (stored as the family's current one, in its rotation
 * row) in one statement. Returns the token's expiry (the earlier of its own and the family's
 * absolute end) and the family's end.
 */
const createSessionStatement = new Precompiled((db, p: NewSession) =>
  db
    .with('family', (qb) =>
      qb
        .insertInto('token_families')
        .values({ id: p.familyId, user_id: p.userId, absolute_expires_at: sql<Date>`now() + make_interval(secs => ${p.absoluteTtlSeconds})` })
        .returning(['id', 'absolute_expires_at']),
    )
    .with('rotation', (qb) =>
      qb
        .insertInto('token_family_rotations')
        .columns(['family_id', 'current_refresh_jti'])
        .expression((eb) => eb.selectFrom('family').select(['family.id', sql<string>`${p.jti}::text`.as('current_refresh_jti')])),
    )
    .selectFrom('family')
    .select([cappedAtFamilyEnd(p.expiresAt, 'family').as('expires_at'), 'family.absolute_expires_at']),
)

export async function createSession(db: Db, session: NewSession): Promise<StoredTerm> {
  const row = await createSessionStatement.first(db, session)
  if (!row) throw new Error('createSession: nothing inserted')
  return { expiresAt: row.expires_at, familyEndsAt: row.absolute_expires_at }
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
    .with('rotation', (qb) =>
      qb
        .insertInto('token_family_rotations')
        .columns(['family_id', 'current_refresh_jti'])
        .expression((eb) => eb.selectFrom('family').select(['family.id', sql<string>`${p.jti}::text`.as('current_refresh_jti')])),
    )
    .selectFrom('family')
    .innerJoin('login', (join) => join.onTrue())
    .select([cappedAtFamilyEnd(p.expiresAt, 'family').as('expires_at'), 'family.absolute_expires_at', 'login.last_login']),
)

/** The token's expiry, the family's end and the new last_login; undefined when the user may no longer log in. */
export async function createLoginSession(db: Db, session: LoginSession): Promise<(StoredTerm & { lastLogin: Date }) | undefined> {
  const row = await loginSessionStatement.first(db, session)
  if (!row) return undefined
  return { expiresAt: row.expires_at, familyEndsAt: row.absolute_expires_at, lastLogin: row.last_login ?? new Date() }
}

export interface Rotation {
  jti: string
  familyId: string
  userId: string
  /** The successor's jti, made by the caller so that it can sign the token once it is stored. */
  nextJti: string
  /** The successor's issue time (seconds) and own expiry (TokenSigner.refreshTerm); the family's end caps the expiry. */
  issuedAt: number
  expiresAt: Date
}

/** The family is live: not revoked, not past its absolute expiry, its user active. */
const familyIsLive = ({ and, eb, exists, selectFrom }: ExpressionBuilder<Database, 'token_families'>) =>
  and([
    eb('token_families.revoked_at', 'is', null),
    eb('token_families.absolute_expires_at', '>', sql<Date>`now()`),
    exists(
      selectFrom('users').select(sql.lit(1).as('active')).whereRef('users.id', '=', 'token_families.user_id').where('users.is_active', '=', true),
    ),
  ])

/**
 * A refresh-token rotation in one atomic statement, a compare-and-set on the family's rotation row
 * (migration 0016: the family's own row, which every request reads, is only read here): the
 * presented token is spent if it is the family's current one and the family is live, and its
 * successor becomes the current one; the spent jti and the successor's term are kept beside it for
 * a retry within the grace (`findRetriedSuccessor`). Of two requests presenting the same token, the
 * second waits on the first's row lock and then finds another current token; a revocation marks
 * that row too (its trigger), so that a rotation waiting on it then finds the family revoked. Returns the successor's expiry (the earlier of its
 * own and the family's end) and the family's end, or undefined when nothing was spent.
 */
const rotationStatement = new Precompiled((db, { jti, familyId, userId, nextJti, issuedAt, expiresAt }: Rotation) =>
  db
    .updateTable('token_family_rotations')
    .from('token_families')
    .set({
      current_refresh_jti: nextJti,
      previous_refresh_jti: jti,
      current_refresh_issued_at: sql<Date>`to_timestamp(${issuedAt}::bigint)`,
      current_refresh_expires_at: cappedAtFamilyEnd(expiresAt),
    })
    .whereRef('token_families.id', '=', 'token_family_rotations.family_id')
    .where('token_family_rotations.family_id', '=', familyId)
    .where('token_family_rotations.current_refresh_jti', '=', jti)
    .where('token_family_rotations.family_revoked_at', 'is', null)
    .where('token_families.user_id', '=', userId)
    .where((eb) => familyIsLive(eb as unknown as ExpressionBuilder<Database, 'token_families'>))
    .returning(['token_family_rotations.current_refresh_expires_at as expires_at', 'token_families.absolute_expires_at']),
)

export async function spendAndReplaceRefreshToken(db: Db, rotation: Rotation): Promise<StoredTerm | undefined> {
  const row = await rotationStatement.first(db, rotation)
  return row?.expires_at ? { expiresAt: row.expires_at, familyEndsAt: row.absolute_expires_at } : undefined
}

export interface SpentToken {
  jti: string
  familyId: string
  userId: string
  /** REFRESH_REUSE_GRACE in seconds. */
  graceSeconds: number
}

/** The successor a retried refresh token gets again: its jti and the term it was signed with, and its family's end. */
export interface RetriedSuccessor extends StoredTerm {
  jti: string
  issuedAt: Date
}

/**
 * A spent refresh token presented again within the grace of its rotation, while its successor is
 * still the family's current (unused) token and the family is live: a retry whose answer was lost,
 * not a replay. Reads only, by primary key, so that concurrent retries all find the same successor.
 */
const retriedSuccessorStatement = new Precompiled((db, { jti, familyId, userId, graceSeconds }: SpentToken) =>
  db
    .selectFrom('token_family_rotations')
    .innerJoin('token_families', 'token_families.id', 'token_family_rotations.family_id')
    .select([
      'token_family_rotations.current_refresh_jti as jti',
      'token_family_rotations.current_refresh_issued_at as issued_at',
      'token_family_rotations.current_refresh_expires_at as expires_at',
      'token_families.absolute_expires_at',
    ])
    .where('token_family_rotations.family_id', '=', familyId)
    .where('token_families.user_id', '=', userId)
    .where('token_family_rotations.previous_refresh_jti', '=', jti)
    .where('token_family_rotations.current_refresh_issued_at', '>', sql<Date>`now() - make_interval(secs => ${graceSeconds})`)
    .where((eb) => familyIsLive(eb as unknown as ExpressionBuilder<Database, 'token_families'>)),
)

export async function findRetriedSuccessor(db: Db, spent: SpentToken): Promise<RetriedSuccessor | undefined> {
  if (spent.graceSeconds <= 0) return undefined
  const row = await retriedSuccessorStatement.first(db, spent)
  if (!row?.jti || !row.issued_at || !row.expires_at) return undefined
  return { jti: row.jti, issuedAt: row.issued_at, expiresAt: row.expires_at, familyEndsAt: row.absolute_expires_at }
}

/**
 * A spent refresh token presented again is theft or a bug (RFC 9700 §4.14): its whole family is
 * revoked. A token of the family that verified but is not its current one was spent: every refresh
 * token is signed only after it became its family's current one. Nothing happens when the token is
 * still the current one (the rotation failed for another reason: the family ended, or its user was
 * disabled) or the family is already revoked. True when this call revoked the family.
 */
export async function revokeFamilyOnReuse(db: Db, jti: string, familyId: string): Promise<boolean> {
  const result = await db
    .updateTable('token_families')
    .set({ revoked_at: sql<Date>`now()`, revoked_reason: 'reuse' })
    .where('id', '=', familyId)
    .where('revoked_at', 'is', null)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('token_family_rotations')
            .select(sql.lit(1).as('current'))
            .where('token_family_rotations.family_id', '=', familyId)
            .where('token_family_rotations.current_refresh_jti', '=', jti),
        ),
      ),
    )
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Whether `jti` is still the current refresh token of its live family: the session is as the answer that gave it left it. */
export async function isCurrentRefreshToken(db: Db, familyId: string, jti: string): Promise<boolean> {
  const row = await db
    .selectFrom('token_family_rotations')
    .select('family_id')
    .where('family_id', '=', familyId)
    .where('current_refresh_jti', '=', jti)
    .where('family_revoked_at', 'is', null)
    .executeTakeFirst()
  return row !== undefined
}

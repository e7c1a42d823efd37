import { createHash } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import { Precompiled, rawStatement } from '../db/precompiled.js'
import type { Database, Db } from '../../db/types.js'

/** A key's row: (scope, route, SHA-256 of the key). */
export interface KeyName {
  scope: string
  route: string
  keyHash: Buffer
}

export interface Claim extends KeyName {
  fingerprint: Buffer
}

/** A kept answer: every row holds one (migration 0010), written with the work it answers. */
export interface KeyRow {
  fingerprint: Buffer | Uint8Array
  status: number
  answer: Buffer | Uint8Array
  /** Seconds since the answer was kept, by the database's clock (a route may replay it for less than the key lives). */
  age: number
}

/** How long a key and its answer are kept (docs/api.md); the retention command deletes older ones. */
export const KEY_LIFETIME_SECONDS = 24 * 60 * 60

/** A key's row: SHA-256 of its scope, route and key hash, one short primary key (migration 0013). */
export function keyId(name: KeyName): Buffer {
  return createHash('sha256').update(name.scope).update('\0').update(name.route).update('\0').update(name.keyHash).digest()
}

/**
 * The transaction-scoped advisory lock of a key: 64 bits of its row's id. Two keys sharing them
 * (one chance in 2^64) only wait for each other (409), never share an answer.
 */
export function keyLockId(name: KeyName): string {
  return keyId(name).readBigInt64BE(0).toString()
}

/**
 * One statement, the first of a keyed request's transaction: takes the key's lock without waiting,
 * and reads its live row (a row older than the key lifetime is as if absent). The row is read as of
 * the statement's start, just before the lock: a request that committed in between is caught by
 * the answer's INSERT (`insertAnswerStatement`).
 */
const lockStatement = new Precompiled((db, p: { keyId: Buffer; lockId: string }) =>
  rawStatement(
    db,
    sql<{ locked: boolean; fingerprint: Uint8Array | null; status: number | null; answer: Uint8Array | null; age: number | null }>`
      SELECT pg_try_advisory_xact_lock(${p.lockId}::int8) AS locked, k.fingerprint, k.status, k.answer,
             extract(epoch FROM now() - k.created_at)::float8 AS age
        FROM (SELECT 1) AS one
        LEFT JOIN idempotency_keys AS k
          ON k.key_id = ${p.keyId}
         AND k.created_at >= now() - ${KEY_LIFETIME_SECONDS} * interval '1 second'`,
  ),
)

/**
 * The answer, in the transaction of the work it answers, dated when it is written (not when the
 * transaction began, before the work): its age is how long it has been replayable. It replaces an expired row (retention has
 * not deleted it yet), never a live one: no row back means another request's answer committed since
 * this one's lock statement read the key.
 */
const insertAnswerStatement = new Precompiled((db, p: { keyId: Buffer; fingerprint: Buffer; status: number; answer: Buffer }) =>
  rawStatement(
    db,
    sql<{ kept: number }>`
      INSERT INTO idempotency_keys AS k (key_id, fingerprint, status, answer, created_at)
      VALUES (${p.keyId}, ${p.fingerprint}, ${p.status}, ${p.answer}, clock_timestamp())
      ON CONFLICT (key_id) DO UPDATE
         SET fingerprint = excluded.fingerprint, status = excluded.status, answer = excluded.answer, created_at = excluded.created_at
       WHERE k.created_at < now() - ${KEY_LIFETIME_SECONDS} * interval '1 second'
      RETURNING 1 AS kept`,
  ),
)

const findStatement = new Precompiled((db, p: { keyId: Buffer }) =>
  rawStatement(
    db,
    sql<KeyRow>`
      SELECT fingerprint, status, answer, extract(epoch FROM now() - created_at)::float8 AS age
        FROM idempotency_keys
       WHERE key_id = ${p.keyId}
         AND created_at >= now() - ${KEY_LIFETIME_SECONDS} * interval '1 second'`,
  ),
)

export interface LockedKey {
  /** Whether this transaction now holds the key's lock. */
  locked: boolean
  /** The key's kept answer, committed before the statement began: final, whoever holds the lock. */
  row: KeyRow | undefined
}

/** In the request's transaction: the key's lock (not waited for) and its live row. */
export async function lockKey(trx: Db, name: KeyName): Promise<LockedKey> {
  const id = keyId(name)
  const found = await lockStatement.first(trx, { keyId: id, lockId: id.readBigInt64BE(0).toString() })
  const row =
    found?.fingerprint && found.status !== null && found.answer
      ? { fingerprint: found.fingerprint, status: found.status, answer: found.answer, age: Number(found.age) }
      : undefined
  return { locked: found?.locked === true, row }
}

/** In the request's transaction: true when the answer is written, false when another one is kept already. */
export async function insertAnswer(trx: Db, claim: Claim, status: number, answer: Buffer): Promise<boolean> {
  return (await insertAnswerStatement.first(trx, { keyId: keyId(claim), fingerprint: claim.fingerprint, status, answer })) !== undefined
}

/** The key's live row, read on its own (after the request's transaction ended). */
export async function findKey(db: Db, name: KeyName): Promise<KeyRow | undefined> {
  return findStatement.first(db, { keyId: keyId(name) })
}

export type SettledKey = { held: true } | { held: false; row: KeyRow | undefined }

/**
 * The key's live row once no transaction holds its lock; `held` while one still does (the request
 * whose commit went unanswered may still be running on a server that lost its client). Lock first,
 * then read, in a transaction of its own: the read's snapshot then follows the lock.
 */
export async function findSettledKey(db: Kysely<Database>, name: KeyName): Promise<SettledKey> {
  return db.transaction().execute(async (trx): Promise<SettledKey> => {
    const lock = await sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${keyLockId(name)}::int8) AS locked`.execute(trx)
    if (!lock.rows[0]?.locked) return { held: true }
    return { held: false, row: await findKey(trx, name) }
  })
}

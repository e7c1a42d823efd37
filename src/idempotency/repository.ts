import { sql } from 'kysely'
import { Precompiled, rawStatement } from '../db/precompiled.js'
import type { Db } from '../../db/types.js'

/** A key's row: (scope, route, SHA-256 of the key). */
export interface KeyName {
  scope: string
  route: string
  keyHash: Buffer
}

export interface Claim extends KeyName {
  fingerprint: Buffer
}

export interface KeyRow {
  fingerprint: Buffer | Uint8Array
  status: number | null
  answer: Buffer | Uint8Array | null
  /** Older than the 24 h a key is kept: as if it were not there. */
  expired: boolean
  /** Still running, claimed longer ago than the claim timeout: its request is taken to have died. */
  abandoned: boolean
}

/** How long a key and its answer are kept (docs/api.md); the retention command deletes older ones. */
export const KEY_LIFETIME_SECONDS = 24 * 60 * 60

const claimStatement = new Precompiled((db, p: Claim) =>
  db
    .insertInto('idempotency_keys')
    .values({ scope: p.scope, route: p.route, key_hash: p.keyHash, fingerprint: p.fingerprint })
    .onConflict((conflict) => conflict.doNothing())
    .returning(sql<number>`1`.as('claimed')),
)

const keyStatement = new Precompiled((db, p: KeyName & { claimTimeoutMs: number }) =>
  rawStatement(
    db,
    sql<KeyRow>`
      SELECT fingerprint, status, answer,
             created_at < now() - ${KEY_LIFETIME_SECONDS} * interval '1 second' AS expired,
             status IS NULL AND created_at < now() - ${p.claimTimeoutMs}::float8 * interval '1 millisecond' AS abandoned
        FROM idempotency_keys
       WHERE scope = ${p.scope} AND route = ${p.route} AND key_hash = ${p.keyHash}`,
  ),
)

/** Takes over an expired key, or an abandoned claim; of concurrent takeovers one wins (the row is re-checked after a wait). */
const takeOverStatement = new Precompiled((db, p: Claim & { claimTimeoutMs: number }) =>
  rawStatement(
    db,
    sql<{ claimed: number }>`
      UPDATE idempotency_keys
         SET fingerprint = ${p.fingerprint}, status = NULL, answer = NULL, created_at = now()
       WHERE scope = ${p.scope} AND route = ${p.route} AND key_hash = ${p.keyHash}
         AND (created_at < now() - ${KEY_LIFETIME_SECONDS} * interval '1 second'
              OR (status IS NULL AND created_at < now() - ${p.claimTimeoutMs}::float8 * interval '1 millisecond'))
      RETURNING 1 AS claimed`,
  ),
)

const storeStatement = new Precompiled((db, p: KeyName & { status: number; answer: Buffer }) =>
  db
    .updateTable('idempotency_keys')
    .set({ status: p.status, answer: p.answer })
    .where('scope', '=', p.scope)
    .where('route', '=', p.route)
    .where('key_hash', '=', p.keyHash)
    .where('status', 'is', null),
)

const releaseStatement = new Precompiled((db, p: KeyName) =>
  db
    .deleteFrom('idempotency_keys')
    .where('scope', '=', p.scope)
    .where('route', '=', p.route)
    .where('key_hash', '=', p.keyHash)
    .where('status', 'is', null),
)

/** One statement: true when this request now holds the key (a new row). */
export async function claimKey(db: Db, claim: Claim): Promise<boolean> {
  return (await claimStatement.first(db, claim)) !== undefined
}

export async function findKey(db: Db, name: KeyName, claimTimeoutMs: number): Promise<KeyRow | undefined> {
  return keyStatement.first(db, { ...name, claimTimeoutMs })
}

export async function takeOverKey(db: Db, claim: Claim, claimTimeoutMs: number): Promise<boolean> {
  return (await takeOverStatement.first(db, { ...claim, claimTimeoutMs })) !== undefined
}

/** The first answer, kept for the retries; only while the claim is still unanswered. */
export async function storeAnswer(db: Db, name: KeyName, status: number, answer: Buffer): Promise<void> {
  await storeStatement.rows(db, { ...name, status, answer })
}

/** Gives the key back (a 5xx, nothing done): the next request with it runs. */
export async function releaseKey(db: Db, name: KeyName): Promise<void> {
  await releaseStatement.rows(db, name)
}

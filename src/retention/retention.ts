import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../../db/types.js'
import { KEY_LIFETIME_SECONDS } from '../idempotency/repository.js'

export interface RetentionOptions {
  /** Seconds a token family is kept after it ended (expired or revoked). */
  tokenFamilyRetention: number
  /** Seconds a webhook delivery is kept after it was received. */
  webhookDeliveryRetention: number
  /**
   * Seconds during which the provider may deliver the same event again: deliveries that young are
   * never deleted, whatever the retention, since their rows are what recognises a repeat (route 12).
   */
  webhookRetryWindow: number
  /** Rows per DELETE: each batch is a short transaction, so that the tables stay writable throughout. */
  batchSize: number
}

export interface RetentionReport {
  tokenFamilies: number
  webhookDeliveries: number
  idempotencyKeys: number
}

type Progress = (line: string) => void

/** The instants before which each table's rows go, taken once. */
function cutoffs(options: RetentionOptions, now = Date.now()) {
  return {
    familyCut: new Date(now - options.tokenFamilyRetention * 1000),
    deliveryCut: new Date(now - Math.max(options.webhookDeliveryRetention, options.webhookRetryWindow) * 1000),
    keyCut: new Date(now - KEY_LIFETIME_SECONDS * 1000),
  }
}

/** What runRetention would delete now, counted, deleting nothing (`npm run retention -- --dry-run`). */
export async function countRetention(db: Db, options: RetentionOptions): Promise<RetentionReport> {
  const { familyCut, deliveryCut, keyCut } = cutoffs(options)
  const count = async (query: RawBuilder<{ count: string }>) => Number((await query.execute(db)).rows[0]?.count ?? 0)
  return {
    tokenFamilies: await count(sql`SELECT count(*) FROM token_families WHERE least(absolute_expires_at, revoked_at) < ${familyCut}`),
    webhookDeliveries: await count(sql`SELECT count(*) FROM webhook_deliveries WHERE received_at < ${deliveryCut}`),
    idempotencyKeys: await count(sql`SELECT count(*) FROM idempotency_keys WHERE created_at < ${keyCut}`),
  }
}

/**
 * Runs `deleteBatch` (a DELETE of at most `batchSize` rows, its own statement: autocommit) until a
 * batch comes back short; `progress` hears after every batch.
 */
async function deleteInBatches(db: Db, label: string, progress: Progress, deleteBatch: RawBuilder<unknown>, batchSize: number): Promise<number> {
  let total = 0
  for (;;) {
    const deleted = Number((await deleteBatch.execute(db)).numAffectedRows ?? 0)
    total += deleted
    if (deleted > 0) progress(`${label}: ${total} deleted`)
    if (deleted < batchSize) return total
  }
}

/**
 * Deletes token families that ended (expired or revoked) more than `tokenFamilyRetention` ago,
 * webhook deliveries received more than `webhookDeliveryRetention` ago, never one younger than the
 * provider's retry window, and `Idempotency-Key` answers past their 24 h. The cut-offs are taken
 * once, at the start.
 */
export async function runRetention(db: Db, options: RetentionOptions, progress: Progress = () => undefined): Promise<RetentionReport> {
  const { familyCut, deliveryCut, keyCut } = cutoffs(options)
  const limit = options.batchSize
  progress(`token families ended before ${familyCut.toISOString()}, webhook deliveries received before ${deliveryCut.toISOString()}`)

  // Each batch finds its rows through token_families_ended_idx / webhook_deliveries_received_idx (0007).
  const tokenFamilies = await deleteInBatches(
    db,
    'token families',
    progress,
    sql`DELETE FROM token_families
         WHERE id IN (SELECT id FROM token_families WHERE least(absolute_expires_at, revoked_at) < ${familyCut} LIMIT ${limit})`,
    limit,
  )
  const webhookDeliveries = await deleteInBatches(
    db,
    'webhook deliveries',
    progress,
    sql`DELETE FROM webhook_deliveries
         WHERE id IN (SELECT id FROM webhook_deliveries WHERE received_at < ${deliveryCut} LIMIT ${limit})`,
    limit,
  )
  // Through idempotency_keys_created_idx (0009), then each row by its address: the table has no
  // one-column key to join on, and a join on its primary key hashed the whole table.
  const idempotencyKeys = await deleteInBatches(
    db,
    'idempotency keys',
    progress,
    sql`DELETE FROM idempotency_keys
         WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys WHERE created_at < ${keyCut} LIMIT ${limit}))`,
    limit,
  )
  progress(`done: ${tokenFamilies} token families, ${webhookDeliveries} webhook deliveries, ${idempotencyKeys} idempotency keys deleted`)
  return { tokenFamilies, webhookDeliveries, idempotencyKeys }
}

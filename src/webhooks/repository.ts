import { sql } from 'kysely'
import { Precompiled, rawStatement } from '../db/precompiled.js'
import type { Db } from '../../db/types.js'
import type { EnvelopeStatus, SignerStatus } from '../vocabulary.js'
import type { BatchChanges, DeliveryOutcome, LockedEnvelope, LockedSigner } from './esign-events.js'

export interface NewDelivery {
  dedupeKey: string
  rawBody: Buffer
  eventName: string
  envelopeKey: string
  occurredAt: Date
  /** The e-mail of the signer the event is about, for the events that concern one. */
  signerEmail: string | undefined
}

export interface StoredDelivery {
  id: string
  dedupeKey: string
  /** The delivery's envelope, locked until the transaction ends; undefined when no envelope has its key. */
  envelope: LockedEnvelope | undefined
  /** The signer it names on that envelope, locked too; undefined when there is none. */
  signer: LockedSigner | undefined
}

interface StoreParameters {
  provider: string
  dedupeKeys: string[]
  rawBodies: Buffer[]
  eventNames: string[]
  envelopeKeys: string[]
  occurredAts: string[]
  signerEmails: (string | null)[]
}

interface StoredRow {
  id: string
  dedupe_key: string
  envelope_id: string | null
  envelope_status: EnvelopeStatus | null
  envelope_last_event_at: Date | null
  signer_id: string | null
  signer_status: SignerStatus | null
  signer_last_event_at: Date | null
}

/**
 * Stores the deliveries and locks the envelopes, and the signers, that the new ones name: one
 * statement. A body stored before (the (provider, dedupe_key) constraint) returns no row and locks
 * nothing: a concurrent repeat waits on the insert for the first to commit, then finds it.
 *
 * - Rows go in in dedupe-key order, envelopes are locked in id order after every insert, and a
 *   signer only once its envelope is locked, so that two batches never wait on each other in a cycle.
 * - Locking reads return the newest version of each row, even when the lock was granted only after
 *   another transaction changed it: what an earlier event of the same envelope left.
 */
const storeAndLockStatement = new Precompiled((db, p: StoreParameters) =>
  rawStatement(
    db,
    sql<StoredRow>`
      WITH input AS (
        SELECT *
          FROM unnest(${p.dedupeKeys}::text[], ${p.rawBodies}::bytea[], ${p.eventNames}::text[],
                      ${p.envelopeKeys}::text[], ${p.occurredAts}::timestamptz[], ${p.signerEmails}::text[])
               AS d (dedupe_key, raw_body, event_name, envelope_key, occurred_at, signer_email)
      ),
      delivery AS (
        INSERT INTO webhook_deliveries (provider, dedupe_key, raw_body, event_name, envelope_key, occurred_at)
        SELECT ${p.provider}, dedupe_key, raw_body, event_name, envelope_key, occurred_at FROM input ORDER BY dedupe_key
        ON CONFLICT (provider, dedupe_key) DO NOTHING
        RETURNING id, dedupe_key, envelope_key
      ),
      envelope AS MATERIALIZED (
        SELECT id, envelope_key, status, last_event_at
          FROM signature_envelopes
         WHERE envelope_key = ANY (ARRAY(SELECT envelope_key FROM delivery))
         ORDER BY id
           FOR UPDATE
      ),
      signer AS MATERIALIZED (
        SELECT s.id, s.envelope_id, s.email, s.status, s.last_event_at
          FROM envelope
          JOIN signature_signers s ON s.envelope_id = envelope.id
         WHERE (envelope.envelope_key, s.email) IN (
                 SELECT input.envelope_key, input.signer_email FROM input JOIN delivery USING (dedupe_key))
         ORDER BY s.id
           FOR UPDATE OF s
      )
      SELECT delivery.id, delivery.dedupe_key,
             envelope.id AS envelope_id, envelope.status AS envelope_status, envelope.last_event_at AS envelope_last_event_at,
             signer.id AS signer_id, signer.status AS signer_status, signer.last_event_at AS signer_last_event_at
        FROM delivery
        JOIN input USING (dedupe_key)
        LEFT JOIN envelope ON envelope.envelope_key = delivery.envelope_key
        LEFT JOIN signer ON signer.envelope_id = envelope.id AND signer.email = input.signer_email`,
  ),
)

/** The new deliveries among these, with what they name, locked; a repeat of a stored body is left out. */
export async function storeDeliveriesAndLock(db: Db, provider: string, deliveries: NewDelivery[]): Promise<StoredDelivery[]> {
  const rows = await storeAndLockStatement.rows(db, {
    provider,
    dedupeKeys: deliveries.map((delivery) => delivery.dedupeKey),
    rawBodies: deliveries.map((delivery) => delivery.rawBody),
    eventNames: deliveries.map((delivery) => delivery.eventName),
    envelopeKeys: deliveries.map((delivery) => delivery.envelopeKey),
    occurredAts: deliveries.map((delivery) => delivery.occurredAt.toISOString()),
    signerEmails: deliveries.map((delivery) => delivery.signerEmail ?? null),
  })
  return rows.map((row) => ({
    id: row.id,
    dedupeKey: row.dedupe_key,
    envelope:
      row.envelope_id !== null && row.envelope_status !== null
        ? { id: row.envelope_id, status: row.envelope_status, last_event_at: row.envelope_last_event_at }
        : undefined,
    signer:
      row.signer_id !== null && row.signer_status !== null
        ? { id: row.signer_id, status: row.signer_status, last_event_at: row.signer_last_event_at }
        : undefined,
  }))
}

interface ApplyParameters {
  deliveryIds: string[]
  outcomes: DeliveryOutcome[]
  envelopeIds: string[]
  envelopeStatuses: EnvelopeStatus[]
  envelopeEventAts: string[]
  completedAts: (string | null)[]
  signerIds: string[]
  signerStatuses: SignerStatus[]
  signerEventAts: string[]
  signedAts: (string | null)[]
}

/**
 * The envelopes' and signers' changes and the deliveries' outcomes, in one statement of a fixed
 * shape. Each row is found by key (`= ANY`, an index scan in the plan made once for any number of
 * rows) and takes its values at its own position in the arrays: no join, whose hash tables cost
 * more to build than a batch's few rows are worth.
 */
const applyStatement = new Precompiled((db, p: ApplyParameters) =>
  rawStatement(
    db,
    sql<never>`
      WITH envelope_update AS (
        UPDATE signature_envelopes e
           SET status = (${p.envelopeStatuses}::text[])[array_position(${p.envelopeIds}::uuid[], e.id)],
               last_event_at = (${p.envelopeEventAts}::timestamptz[])[array_position(${p.envelopeIds}::uuid[], e.id)],
               completed_at = coalesce((${p.completedAts}::timestamptz[])[array_position(${p.envelopeIds}::uuid[], e.id)], e.completed_at),
               updated_at = now()
         WHERE e.id = ANY (${p.envelopeIds}::uuid[])
      ),
      signer_update AS (
        UPDATE signature_signers s
           SET status = (${p.signerStatuses}::text[])[array_position(${p.signerIds}::uuid[], s.id)],
               last_event_at = (${p.signerEventAts}::timestamptz[])[array_position(${p.signerIds}::uuid[], s.id)],
               signed_at = coalesce((${p.signedAts}::timestamptz[])[array_position(${p.signerIds}::uuid[], s.id)], s.signed_at)
         WHERE s.id = ANY (${p.signerIds}::uuid[])
      )
      UPDATE webhook_deliveries d
         SET outcome = (${p.outcomes}::text[])[array_position(${p.deliveryIds}::uuid[], d.id)], processed_at = now()
       WHERE d.id = ANY (${p.deliveryIds}::uuid[])`,
  ),
)

const isoOrNull = (date: Date | undefined): string | null => (date === undefined ? null : date.toISOString())

/** Writes what a batch of events changes in its locked envelopes and signers, and each delivery's outcome. */
export async function applyChanges(db: Db, changes: BatchChanges): Promise<void> {
  const envelopes = [...changes.envelopes]
  const signers = [...changes.signers]
  await applyStatement.rows(db, {
    deliveryIds: [...changes.outcomes.keys()],
    outcomes: [...changes.outcomes.values()],
    envelopeIds: envelopes.map(([id]) => id),
    envelopeStatuses: envelopes.map(([, change]) => change.status),
    envelopeEventAts: envelopes.map(([, change]) => change.last_event_at.toISOString()),
    completedAts: envelopes.map(([, change]) => isoOrNull(change.completed_at)),
    signerIds: signers.map(([id]) => id),
    signerStatuses: signers.map(([, change]) => change.status),
    signerEventAts: signers.map(([, change]) => change.last_event_at.toISOString()),
    signedAts: signers.map(([, change]) => isoOrNull(change.signed_at)),
  })
}

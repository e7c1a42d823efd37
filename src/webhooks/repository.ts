import { sql } from 'kysely'
import type { Db, WebhookDeliveriesTable } from '../db/types.js'
import type { EnvelopeChange, EnvelopeState, SignerChange, SignerState } from './esign-events.js'

export type DeliveryOutcome = NonNullable<WebhookDeliveriesTable['outcome']>

export interface NewDelivery {
  provider: string
  dedupeKey: string
  rawBody: Buffer
  eventName: string
  envelopeKey: string
  occurredAt: Date
}

/**
 * Stores a delivery unless the same body was stored before (the (provider, dedupe_key) constraint):
 * its id, or undefined for a repeat. A concurrent repeat waits here for the first to commit.
 */
export async function insertDelivery(db: Db, delivery: NewDelivery): Promise<string | undefined> {
  const row = await db
    .insertInto('webhook_deliveries')
    .values({
      provider: delivery.provider,
      dedupe_key: delivery.dedupeKey,
      raw_body: delivery.rawBody,
      event_name: delivery.eventName,
      envelope_key: delivery.envelopeKey,
      occurred_at: delivery.occurredAt,
    })
    .onConflict((conflict) => conflict.columns(['provider', 'dedupe_key']).doNothing())
    .returning('id')
    .executeTakeFirst()
  return row?.id
}

export async function recordOutcome(db: Db, deliveryId: string, outcome: DeliveryOutcome): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ outcome, processed_at: sql<Date>`now()` })
    .where('id', '=', deliveryId)
    .execute()
}

/** The envelope, locked for the rest of the transaction so that its events apply one at a time. */
export function lockEnvelope(db: Db, envelopeKey: string): Promise<(EnvelopeState & { id: string }) | undefined> {
  return db
    .selectFrom('signature_envelopes')
    .select(['id', 'status', 'last_event_at'])
    .where('envelope_key', '=', envelopeKey)
    .forUpdate()
    .executeTakeFirst()
}

/** A signer of an (already locked) envelope, by e-mail. */
export function findSigner(db: Db, envelopeId: string, email: string): Promise<(SignerState & { id: string }) | undefined> {
  return db
    .selectFrom('signature_signers')
    .select(['id', 'status', 'last_event_at'])
    .where('envelope_id', '=', envelopeId)
    .where('email', '=', email)
    .executeTakeFirst()
}

export async function updateEnvelope(db: Db, envelopeId: string, change: EnvelopeChange): Promise<void> {
  await db
    .updateTable('signature_envelopes')
    .set({ ...change, updated_at: sql<Date>`now()` })
    .where('id', '=', envelopeId)
    .execute()
}

export async function updateSigner(db: Db, signerId: string, change: SignerChange): Promise<void> {
  await db.updateTable('signature_signers').set(change).where('id', '=', signerId).execute()
}

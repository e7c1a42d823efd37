import { sql } from 'kysely'
import { Precompiled } from '../db/precompiled.js'
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

const insertDeliveryStatement = new Precompiled((db, p: NewDelivery) =>
  db
    .insertInto('webhook_deliveries')
    .values({
      provider: p.provider,
      dedupe_key: p.dedupeKey,
      raw_body: p.rawBody,
      event_name: p.eventName,
      envelope_key: p.envelopeKey,
      occurred_at: p.occurredAt,
    })
    .onConflict((conflict) => conflict.columns(['provider', 'dedupe_key']).doNothing())
    .returning('id'),
)

/**
 * Stores a delivery unless the same body was stored before (the (provider, dedupe_key) constraint):
 * its id, or undefined for a repeat. A concurrent repeat waits here for the first to commit.
 */
export async function insertDelivery(db: Db, delivery: NewDelivery): Promise<string | undefined> {
  return (await insertDeliveryStatement.first(db, delivery))?.id
}

const recordOutcomeStatement = new Precompiled((db, p: { deliveryId: string; outcome: DeliveryOutcome }) =>
  db
    .updateTable('webhook_deliveries')
    .set({ outcome: p.outcome, processed_at: sql<Date>`now()` })
    .where('id', '=', p.deliveryId),
)

export async function recordOutcome(db: Db, deliveryId: string, outcome: DeliveryOutcome): Promise<void> {
  await recordOutcomeStatement.rows(db, { deliveryId, outcome })
}

const lockEnvelopeStatement = new Precompiled((db, p: { envelopeKey: string }) =>
  db
    .selectFrom('signature_envelopes')
    .select(['id', 'status', 'last_event_at'])
    .where('envelope_key', '=', p.envelopeKey)
    .forUpdate(),
)

/** The envelope, locked for the rest of the transaction so that its events apply one at a time. */
export function lockEnvelope(db: Db, envelopeKey: string): Promise<(EnvelopeState & { id: string }) | undefined> {
  return lockEnvelopeStatement.first(db, { envelopeKey })
}

const signerStatement = new Precompiled((db, p: { envelopeId: string; email: string }) =>
  db
    .selectFrom('signature_signers')
    .select(['id', 'status', 'last_event_at'])
    .where('envelope_id', '=', p.envelopeId)
    .where('email', '=', p.email),
)

/**
 * A signer of an envelope that this transaction has locked, by e-mail. A statement of its own, run
 * after the lock: in READ COMMITTED only a statement that starts after the lock is granted sees the
 * signer as the previous event for this envelope left it.
 */
export function findSigner(db: Db, envelopeId: string, email: string): Promise<(SignerState & { id: string }) | undefined> {
  return signerStatement.first(db, { envelopeId, email })
}

const updateEnvelopeStatement = new Precompiled(
  (db, p: { envelopeId: string; status: EnvelopeChange['status']; lastEventAt: Date; completedAt: Date | null }) =>
    db
      .updateTable('signature_envelopes')
      .set((eb) => ({
        status: p.status,
        last_event_at: p.lastEventAt,
        completed_at: eb.fn.coalesce(eb.val(p.completedAt), eb.ref('completed_at')),
        updated_at: sql<Date>`now()`,
      }))
      .where('id', '=', p.envelopeId),
)

export async function updateEnvelope(db: Db, envelopeId: string, change: EnvelopeChange): Promise<void> {
  const { status, last_event_at: lastEventAt, completed_at: completedAt } = change
  await updateEnvelopeStatement.rows(db, { envelopeId, status, lastEventAt, completedAt: completedAt ?? null })
}

const updateSignerStatement = new Precompiled(
  (db, p: { signerId: string; status: SignerChange['status']; lastEventAt: Date; signedAt: Date | null }) =>
    db
      .updateTable('signature_signers')
      .set((eb) => ({
        status: p.status,
        last_event_at: p.lastEventAt,
        signed_at: eb.fn.coalesce(eb.val(p.signedAt), eb.ref('signed_at')),
      }))
      .where('id', '=', p.signerId),
)

export async function updateSigner(db: Db, signerId: string, change: SignerChange): Promise<void> {
  const { status, last_event_at: lastEventAt, signed_at: signedAt } = change
  await updateSignerStatement.rows(db, { signerId, status, lastEventAt, signedAt: signedAt ?? null })
}

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

export interface LockedEnvelope extends EnvelopeState {
  id: string
  /** The envelope's signer with the event's e-mail, when the event names one that exists. */
  signer: (SignerState & { id: string }) | undefined
}

const lockEnvelopeStatement = new Precompiled((db, p: { envelopeKey: string; signerEmail: string | null }) =>
  db
    .selectFrom('signature_envelopes')
    .leftJoin('signature_signers', (join) =>
      join
        .onRef('signature_signers.envelope_id', '=', 'signature_envelopes.id')
        .on('signature_signers.email', '=', p.signerEmail),
    )
    .select([
      'signature_envelopes.id',
      'signature_envelopes.status',
      'signature_envelopes.last_event_at',
      'signature_signers.id as signer_id',
      'signature_signers.status as signer_status',
      'signature_signers.last_event_at as signer_last_event_at',
    ])
    .where('signature_envelopes.envelope_key', '=', p.envelopeKey)
    .forUpdate('signature_envelopes'),
)

/**
 * The envelope, locked for the rest of the transaction so that its events apply one at a time,
 * with its signer of that e-mail (signers are unique per envelope and e-mail) in the same round trip.
 */
export async function lockEnvelope(db: Db, envelopeKey: string, signerEmail: string | undefined): Promise<LockedEnvelope | undefined> {
  const row = await lockEnvelopeStatement.first(db, { envelopeKey, signerEmail: signerEmail ?? null })
  if (!row) return undefined
  const { signer_id: signerId, signer_status: signerStatus, signer_last_event_at: signerLastEventAt } = row
  const signer = signerId !== null && signerStatus !== null ? { id: signerId, status: signerStatus, last_event_at: signerLastEventAt } : undefined
  return { id: row.id, status: row.status, last_event_at: row.last_event_at, signer }
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

import { sql } from 'kysely'
import { Precompiled } from '../db/precompiled.js'
import type { Db, EnvelopeStatus, SignerStatus, WebhookDeliveriesTable } from '../db/types.js'
import type { EnvelopeState, SignerState, Transition } from './esign-events.js'

export type DeliveryOutcome = NonNullable<WebhookDeliveriesTable['outcome']>

export interface NewDelivery {
  provider: string
  dedupeKey: string
  rawBody: Buffer
  eventName: string
  envelopeKey: string
  occurredAt: Date
}

export interface StoredDelivery {
  id: string
  /** The delivery's envelope, locked until the transaction ends; undefined when no envelope has its key. */
  envelope: (EnvelopeState & { id: string }) | undefined
}

/**
 * Stores the delivery and, when it is new, locks its envelope (so that the events of one envelope
 * apply one at a time), in one statement. A body stored before (the (provider, dedupe_key)
 * constraint) returns no row, and locks nothing: a concurrent repeat waits on the insert for the
 * first to commit, then finds it. The lock is taken in the lateral subquery, after the insert.
 */
const storeAndLockStatement = new Precompiled((db, p: NewDelivery) =>
  db
    .with('delivery', (qb) =>
      qb
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
    .selectFrom('delivery')
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('signature_envelopes')
          .select(['signature_envelopes.id', 'signature_envelopes.status', 'signature_envelopes.last_event_at'])
          .where('signature_envelopes.envelope_key', '=', p.envelopeKey)
          .forUpdate()
          .as('envelope'),
      (join) => join.onTrue(),
    )
    .select([
      'delivery.id',
      'envelope.id as envelope_id',
      'envelope.status as envelope_status',
      'envelope.last_event_at as envelope_last_event_at',
    ]),
)

/** The stored delivery and its locked envelope; undefined for a repeat of a stored body. */
export async function storeDeliveryAndLockEnvelope(db: Db, delivery: NewDelivery): Promise<StoredDelivery | undefined> {
  const row = await storeAndLockStatement.first(db, delivery)
  if (!row) return undefined
  const { envelope_id: envelopeId, envelope_status: status, envelope_last_event_at: lastEventAt } = row
  return { id: row.id, envelope: envelopeId !== null && status !== null ? { id: envelopeId, status, last_event_at: lastEventAt } : undefined }
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

interface ApplyParameters {
  deliveryId: string
  outcome: DeliveryOutcome
  /** Null when the envelope does not change (then no row matches and the other envelope values are unused). */
  envelopeId: string | null
  envelopeStatus: EnvelopeStatus | null
  envelopeEventAt: Date | null
  completedAt: Date | null
  signerId: string | null
  signerStatus: SignerStatus | null
  signerEventAt: Date | null
  signedAt: Date | null
}

/**
 * A transition and the delivery's outcome in one statement, of a fixed shape so that it can be
 * precompiled: a part that does not apply has a null id and updates no row.
 */
const applyStatement = new Precompiled((db, p: ApplyParameters) =>
  db
    .with('envelope_update', (qb) =>
      qb
        .updateTable('signature_envelopes')
        .set((eb) => ({
          status: sql<EnvelopeStatus>`${p.envelopeStatus}`,
          last_event_at: p.envelopeEventAt,
          completed_at: eb.fn.coalesce(eb.val(p.completedAt), eb.ref('completed_at')),
          updated_at: sql<Date>`now()`,
        }))
        .where('id', '=', p.envelopeId),
    )
    .with('signer_update', (qb) =>
      qb
        .updateTable('signature_signers')
        .set((eb) => ({
          status: sql<SignerStatus>`${p.signerStatus}`,
          last_event_at: p.signerEventAt,
          signed_at: eb.fn.coalesce(eb.val(p.signedAt), eb.ref('signed_at')),
        }))
        .where('id', '=', p.signerId),
    )
    .updateTable('webhook_deliveries')
    .set({ outcome: p.outcome, processed_at: sql<Date>`now()` })
    .where('id', '=', p.deliveryId),
)

/** Writes what an event changes (if anything) to its locked envelope and signer, and the delivery's outcome. */
export async function applyTransition(
  db: Db,
  delivery: { id: string; outcome: DeliveryOutcome },
  target: { envelopeId: string | undefined; signerId: string | undefined },
  change: Transition,
): Promise<void> {
  const { envelope, signer } = change
  await applyStatement.rows(db, {
    deliveryId: delivery.id,
    outcome: delivery.outcome,
    envelopeId: envelope && target.envelopeId !== undefined ? target.envelopeId : null,
    envelopeStatus: envelope?.status ?? null,
    envelopeEventAt: envelope?.last_event_at ?? null,
    completedAt: envelope?.completed_at ?? null,
    signerId: signer && target.signerId !== undefined ? target.signerId : null,
    signerStatus: signer?.status ?? null,
    signerEventAt: signer?.last_event_at ?? null,
    signedAt: signer?.signed_at ?? null,
  })
}

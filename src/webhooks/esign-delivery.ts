import type { Kysely } from 'kysely'
import type { EsignNotification } from '../../schemas/webhooks.js'
import type { Database } from '../db/types.js'
import { dedupeKeyOf } from './authenticity.js'
import { actionFor, isNoChange, signerEmailOf, transition, type EnvelopeState, type SignerState } from './esign-events.js'
import {
  applyChanges,
  storeDeliveriesAndLock,
  type BatchChanges,
  type DeliveryOutcome,
  type LockedEnvelope,
  type LockedSigner,
  type NewDelivery,
} from './repository.js'

export const ESIGN_PROVIDER = 'esign'

export interface IncomingDelivery {
  rawBody: Buffer
  notification: EsignNotification
}

export interface DeliveryReceipt {
  duplicate: boolean
  outcome?: DeliveryOutcome
}

/** A new delivery's event, with the envelope and signer it names as they were when locked. */
export interface StoredEvent {
  deliveryId: string
  eventName: string
  occurredAt: Date
  envelope: LockedEnvelope | undefined
  signer: LockedSigner | undefined
}

/**
 * The events of a batch applied one after another, in the order given, to the state their locked
 * envelopes and signers were in: each event sees what the ones before it changed. Envelopes and
 * signers only ever leave `pending`, so each changes at most once; a later change would be merged.
 */
export function foldEvents(events: StoredEvent[]): BatchChanges {
  const changes: BatchChanges = { outcomes: new Map(), envelopes: new Map(), signers: new Map() }
  const envelopeStates = new Map<string, EnvelopeState>()
  const signerStates = new Map<string, SignerState>()
  for (const event of events) {
    const action = actionFor(event.eventName)
    if (!action || !event.envelope) {
      changes.outcomes.set(event.deliveryId, action ? 'unmatched' : 'ignored')
      continue
    }
    const { id: envelopeId } = event.envelope
    const envelope = envelopeStates.get(envelopeId) ?? event.envelope
    const signer = event.signer && (signerStates.get(event.signer.id) ?? event.signer)
    const change = transition(envelope, signer, action, event.occurredAt)
    if (change.envelope) {
      envelopeStates.set(envelopeId, { ...envelope, ...change.envelope })
      changes.envelopes.set(envelopeId, { ...changes.envelopes.get(envelopeId), ...change.envelope })
    }
    if (change.signer && signer && event.signer) {
      signerStates.set(event.signer.id, { ...signer, ...change.signer })
      changes.signers.set(event.signer.id, { ...changes.signers.get(event.signer.id), ...change.signer })
    }
    changes.outcomes.set(event.deliveryId, isNoChange(change) ? 'ignored' : 'applied')
  }
  return changes
}

/** The signer's e-mail, for the events that concern a signer. */
function signerEmailFor(notification: EsignNotification): string | undefined {
  const kind = actionFor(notification.event.name)?.kind
  return kind === 'sign' || kind === 'refusal' ? signerEmailOf(notification.event.data) : undefined
}

/**
 * Route 12, for a batch of deliveries: stores them and applies them in one transaction, so that a
 * `201` is never given for a delivery that was not stored, and each stored delivery is applied
 * exactly once. A body stored before, or earlier in the same batch, is a duplicate and changes
 * nothing. Events apply in the batch's order; receipts come in it too.
 */
export async function receiveEsignDeliveries(db: Kysely<Database>, incoming: IncomingDelivery[]): Promise<DeliveryReceipt[]> {
  const deliveries: NewDelivery[] = incoming.map(({ rawBody, notification }) => ({
    dedupeKey: dedupeKeyOf(rawBody),
    rawBody,
    eventName: notification.event.name,
    envelopeKey: notification.document.key,
    occurredAt: new Date(notification.event.occurred_at),
    signerEmail: signerEmailFor(notification),
  }))
  const firsts = new Map<string, NewDelivery>()
  for (const delivery of deliveries) if (!firsts.has(delivery.dedupeKey)) firsts.set(delivery.dedupeKey, delivery)

  const outcomes = await db.transaction().execute(async (trx) => {
    const stored = await storeDeliveriesAndLock(trx, ESIGN_PROVIDER, [...firsts.values()])
    if (stored.length === 0) return new Map<string, DeliveryOutcome>()
    const byKey = new Map(stored.map((row) => [row.dedupeKey, row]))
    const events = [...firsts.values()].flatMap((delivery): StoredEvent[] => {
      const row = byKey.get(delivery.dedupeKey)
      return row ? [{ deliveryId: row.id, eventName: delivery.eventName, occurredAt: delivery.occurredAt, envelope: row.envelope, signer: row.signer }] : []
    })
    const changes = foldEvents(events)
    await applyChanges(trx, changes)
    return new Map(stored.map((row) => [row.dedupeKey, changes.outcomes.get(row.id) ?? 'ignored']))
  })
  return deliveries.map((delivery) => {
    const outcome = firsts.get(delivery.dedupeKey) === delivery ? outcomes.get(delivery.dedupeKey) : undefined
    return outcome === undefined ? { duplicate: true } : { duplicate: false, outcome }
  })
}

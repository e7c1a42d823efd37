import type { Kysely } from 'kysely'
import type { EsignNotification } from '../../schemas/webhooks.js'
import { isDatabaseUnavailable } from '../db/errors.js'
import type { Database } from '../../db/types.js'
import { Coalescer } from '../lib/coalescer.js'
import { dedupeKeyOf } from './authenticity.js'
import { actionFor, foldEvents, signerEmailOf, type DeliveryOutcome, type StoredEvent } from './esign-events.js'
import { applyChanges, storeDeliveriesAndLock, type NewDelivery } from './repository.js'

export const ESIGN_PROVIDER = 'esign'

export interface IncomingDelivery {
  rawBody: Buffer
  notification: EsignNotification
}

export interface DeliveryReceipt {
  duplicate: boolean
  outcome?: DeliveryOutcome
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
      return row
        ? [{ deliveryId: row.id, eventName: delivery.eventName, occurredAt: delivery.occurredAt, envelope: row.envelope, signer: row.signer }]
        : []
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

/**
 * Deliveries that arrive while earlier ones are being written go in together, in one transaction
 * (the transaction's round trips and commit are most of a delivery's cost: bench/RESULTS.md).
 * Two batches in flight keep the event loop and the database busy at once.
 */
const DELIVERY_BATCHING = { maxBatch: 16, maxInFlight: 2 }

/** Route 12's receiver: `submit` one delivery, get its receipt once its batch is committed. */
export function esignDeliveryReceiver(db: Kysely<Database>): Coalescer<IncomingDelivery, DeliveryReceipt> {
  return new Coalescer<IncomingDelivery, DeliveryReceipt>((batch) => receiveEsignDeliveries(db, batch), {
    ...DELIVERY_BATCHING,
    // A batch fails as a whole: retried one by one, a delivery the database rejects (bad text) fails alone.
    retryAlone: (error) => !isDatabaseUnavailable(error),
  })
}

import type { Kysely } from 'kysely'
import type { EsignNotification } from '../../schemas/webhooks.js'
import type { Database, Db } from '../db/types.js'
import { dedupeKeyOf } from './authenticity.js'
import { actionFor, isNoChange, signerEmailOf, transition, type Transition } from './esign-events.js'
import { applyTransition, findSigner, storeDeliveryAndLockEnvelope, type DeliveryOutcome, type StoredDelivery } from './repository.js'

export const ESIGN_PROVIDER = 'esign'

export interface DeliveryReceipt {
  duplicate: boolean
  outcome?: DeliveryOutcome
}

interface Decision {
  outcome: DeliveryOutcome
  change: Transition
  signerId: string | undefined
}

/** What one event does to its (locked) envelope. */
async function decide(db: Db, notification: EsignNotification, envelope: StoredDelivery['envelope'], occurredAt: Date): Promise<Decision> {
  const action = actionFor(notification.event.name)
  if (!action) return { outcome: 'ignored', change: {}, signerId: undefined }
  if (!envelope) return { outcome: 'unmatched', change: {}, signerId: undefined }
  const email = action.kind === 'finish' ? undefined : signerEmailOf(notification.event.data)
  const signer = email === undefined ? undefined : await findSigner(db, envelope.id, email)
  const change = transition(envelope, signer, action, occurredAt)
  return { outcome: isNoChange(change) ? 'ignored' : 'applied', change, signerId: signer?.id }
}

/**
 * Route 12: stores the delivery and applies it in one transaction, so that a `201` is never given
 * for a delivery that was not stored, and each stored delivery is applied exactly once. A body
 * stored before is a duplicate and changes nothing.
 */
export async function receiveEsignDelivery(
  db: Kysely<Database>,
  rawBody: Buffer,
  notification: EsignNotification,
): Promise<DeliveryReceipt> {
  const occurredAt = new Date(notification.event.occurred_at)
  return db.transaction().execute(async (trx) => {
    const stored = await storeDeliveryAndLockEnvelope(trx, {
      provider: ESIGN_PROVIDER,
      dedupeKey: dedupeKeyOf(rawBody),
      rawBody,
      eventName: notification.event.name,
      envelopeKey: notification.document.key,
      occurredAt,
    })
    if (!stored) return { duplicate: true }
    const { outcome, change, signerId } = await decide(trx, notification, stored.envelope, occurredAt)
    await applyTransition(trx, { id: stored.id, outcome }, { envelopeId: stored.envelope?.id, signerId }, change)
    return { duplicate: false, outcome }
  })
}

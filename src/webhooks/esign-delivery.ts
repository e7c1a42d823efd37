import type { Kysely } from 'kysely'
import type { EsignNotification } from '../../schemas/webhooks.js'
import type { Database, Db } from '../db/types.js'
import { dedupeKeyOf } from './authenticity.js'
import { actionFor, isNoChange, signerEmailOf, transition } from './esign-events.js'
import {
  findSigner,
  insertDelivery,
  lockEnvelope,
  recordOutcome,
  updateEnvelope,
  updateSigner,
  type DeliveryOutcome,
} from './repository.js'

export const ESIGN_PROVIDER = 'esign'

export interface DeliveryReceipt {
  duplicate: boolean
  outcome?: DeliveryOutcome
}

/** Applies one event to its envelope, under the envelope's row lock. */
async function applyEvent(db: Db, notification: EsignNotification, occurredAt: Date): Promise<DeliveryOutcome> {
  const action = actionFor(notification.event.name)
  if (!action) return 'ignored'
  const envelope = await lockEnvelope(db, notification.document.key)
  if (!envelope) return 'unmatched'
  const email = action.kind === 'finish' ? undefined : signerEmailOf(notification.event.data)
  const signer = email === undefined ? undefined : await findSigner(db, envelope.id, email)
  const change = transition(envelope, signer, action, occurredAt)
  if (change.envelope) await updateEnvelope(db, envelope.id, change.envelope)
  if (change.signer && signer) await updateSigner(db, signer.id, change.signer)
  return isNoChange(change) ? 'ignored' : 'applied'
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
    const deliveryId = await insertDelivery(trx, {
      provider: ESIGN_PROVIDER,
      dedupeKey: dedupeKeyOf(rawBody),
      rawBody,
      eventName: notification.event.name,
      envelopeKey: notification.document.key,
      occurredAt,
    })
    if (deliveryId === undefined) return { duplicate: true }
    const outcome = await applyEvent(trx, notification, occurredAt)
    await recordOutcome(trx, deliveryId, outcome)
    return { duplicate: false, outcome }
  })
}

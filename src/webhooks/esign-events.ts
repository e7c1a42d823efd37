import type { WebhookDeliveriesTable } from '../../db/types.js'
import type { EnvelopeStatus, SignerStatus } from '../vocabulary.js'

/** What a provider event means for an envelope, independent of its current state. */
export type EsignAction = { kind: 'sign' } | { kind: 'refusal' } | { kind: 'finish'; status: 'signed' | 'cancelled' | 'expired' }

const ACTIONS: Record<string, EsignAction> = {
  sign: { kind: 'sign' },
  refusal: { kind: 'refusal' },
  close: { kind: 'finish', status: 'signed' },
  auto_close: { kind: 'finish', status: 'signed' },
  document_closed: { kind: 'finish', status: 'signed' },
  cancel: { kind: 'finish', status: 'cancelled' },
  deadline: { kind: 'finish', status: 'expired' },
}

/** The action of an event name, or undefined for the events this service does not track. */
export function actionFor(eventName: string): EsignAction | undefined {
  return Object.hasOwn(ACTIONS, eventName) ? ACTIONS[eventName] : undefined
}

const FINAL_ENVELOPE_STATES: ReadonlySet<EnvelopeStatus> = new Set(['signed', 'refused', 'cancelled', 'expired'])

export const isFinalEnvelopeStatus = (status: EnvelopeStatus): boolean => FINAL_ENVELOPE_STATES.has(status)

export interface EnvelopeState {
  status: EnvelopeStatus
  last_event_at: Date | null
}

export interface SignerState {
  status: SignerStatus
  last_event_at: Date | null
}

export interface EnvelopeChange {
  status: EnvelopeStatus
  last_event_at: Date
  completed_at?: Date
}

export interface SignerChange {
  status: SignerStatus
  last_event_at: Date
  signed_at?: Date
}

/** What to write; an empty transition changes nothing. */
export interface Transition {
  envelope?: EnvelopeChange
  signer?: SignerChange
}

const isOlder = (occurredAt: Date, lastEventAt: Date | null): boolean => lastEventAt !== null && occurredAt.getTime() < lastEventAt.getTime()

/** A final state never goes back, and an older event never overwrites a newer one. */
function envelopeChange(envelope: EnvelopeState, status: EnvelopeStatus, occurredAt: Date): EnvelopeChange | undefined {
  if (isFinalEnvelopeStatus(envelope.status) || isOlder(occurredAt, envelope.last_event_at)) return undefined
  return { status, last_event_at: occurredAt, ...(status === 'signed' ? { completed_at: occurredAt } : {}) }
}

/**
 * A signer's signature or refusal. Signed and refused are final for a signer. On a closed envelope, a
 * signer event still lands when it happened before the closing event (it arrived late), never when
 * it happened after; and a completed envelope takes no refusal, which would contradict it.
 */
function signerChange(envelope: EnvelopeState, signer: SignerState, status: 'signed' | 'refused', occurredAt: Date): SignerChange | undefined {
  if (signer.status !== 'pending' || isOlder(occurredAt, signer.last_event_at)) return undefined
  if (isFinalEnvelopeStatus(envelope.status)) {
    const closedAt = envelope.last_event_at
    if (closedAt === null || occurredAt.getTime() > closedAt.getTime()) return undefined
    if (status === 'refused' && envelope.status === 'signed') return undefined
  }
  return { status, last_event_at: occurredAt, ...(status === 'signed' ? { signed_at: occurredAt } : {}) }
}

/**
 * The state machine of route 12: given the envelope, the signer the event names (if any) and the
 * event, what changes. Idempotent (applying the same event twice changes nothing the second time)
 * and monotonic (final states stay, older events never overwrite newer ones, for the envelope and
 * for each signer alike).
 */
export function transition(envelope: EnvelopeState, signer: SignerState | undefined, action: EsignAction, occurredAt: Date): Transition {
  const result: Transition = {}
  if (action.kind === 'finish') {
    const change = envelopeChange(envelope, action.status, occurredAt)
    if (change) result.envelope = change
    return result
  }
  const signerStatus = action.kind === 'sign' ? 'signed' : 'refused'
  const change = signer && signerChange(envelope, signer, signerStatus, occurredAt)
  if (change) result.signer = change
  // A refusal speaks for its signer: one its known signer does not take (stale, or the signer has
  // already signed or refused) cannot refuse the envelope either.
  if (action.kind === 'refusal' && (signer === undefined || change)) {
    const refused = envelopeChange(envelope, 'refused', occurredAt)
    if (refused) result.envelope = refused
  }
  return result
}

export const isNoChange = (result: Transition): boolean => result.envelope === undefined && result.signer === undefined

/**
 * The signer's e-mail in a `sign` or `refusal` event. The provider (Clicksign's format) puts it in
 * `data.signer.email`; `data.signer_email` and `data.email` are accepted too. Lower-cased and trimmed,
 * as signer e-mails are stored.
 */
export function signerEmailOf(data: unknown): string | undefined {
  if (!isRecord(data)) return undefined
  const candidates = [isRecord(data.signer) ? data.signer.email : undefined, data.signer_email, data.email]
  const email = candidates.find((value): value is string => typeof value === 'string' && value.trim() !== '')
  return email?.trim().toLowerCase()
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** What became of a stored delivery. */
export type DeliveryOutcome = NonNullable<WebhookDeliveriesTable['outcome']>

export type LockedEnvelope = EnvelopeState & { id: string }
export type LockedSigner = SignerState & { id: string }

/** What a batch of events changes: each delivery's outcome, and the envelopes and signers to write. */
export interface BatchChanges {
  outcomes: Map<string, DeliveryOutcome>
  envelopes: Map<string, EnvelopeChange>
  signers: Map<string, SignerChange>
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

import { describe, expect, it } from 'vitest'
import { foldEvents, type StoredEvent } from '../../src/webhooks/esign-events.js'

const T1 = new Date('2026-05-01T10:00:00.000Z')
const T2 = new Date('2026-05-01T11:00:00.000Z')
const T3 = new Date('2026-05-01T12:00:00.000Z')

const envelope = { id: 'envelope-1', status: 'pending' as const, last_event_at: null }
const alice = { id: 'signer-alice', status: 'pending' as const, last_event_at: null }
const bob = { id: 'signer-bob', status: 'pending' as const, last_event_at: null }

const event = (deliveryId: string, eventName: string, occurredAt: Date, signer?: typeof alice): StoredEvent => ({
  deliveryId,
  eventName,
  occurredAt,
  envelope,
  signer,
})

describe('foldEvents: the events of one batch, in order', () => {
  it('lets each event see what the ones before it changed', () => {
    // Bob's refusal closes the envelope; Alice's later signature then lands nowhere.
    const changes = foldEvents([event('d1', 'refusal', T1, bob), event('d2', 'sign', T2, alice)])
    expect(Object.fromEntries(changes.outcomes)).toEqual({ d1: 'applied', d2: 'ignored' })
    expect(changes.envelopes.get('envelope-1')).toEqual({ status: 'refused', last_event_at: T1 })
    expect([...changes.signers]).toEqual([['signer-bob', { status: 'refused', last_event_at: T1 }]])
  })

  it('applies a signer event once, even when the batch holds two of them', () => {
    const changes = foldEvents([event('d1', 'sign', T2, alice), event('d2', 'sign', T1, alice)])
    expect(Object.fromEntries(changes.outcomes)).toEqual({ d1: 'applied', d2: 'ignored' })
    expect(changes.signers.get('signer-alice')).toEqual({ status: 'signed', last_event_at: T2, signed_at: T2 })
  })

  it('lands signatures that happened before a close in the same batch, and completes the envelope', () => {
    const changes = foldEvents([event('d1', 'close', T3), event('d2', 'sign', T1, alice), event('d3', 'sign', T2, bob)])
    expect(Object.fromEntries(changes.outcomes)).toEqual({ d1: 'applied', d2: 'applied', d3: 'applied' })
    expect(changes.envelopes.get('envelope-1')).toEqual({ status: 'signed', last_event_at: T3, completed_at: T3 })
    expect(changes.signers.size).toBe(2)
  })

  it('marks unknown events ignored and events of unknown envelopes unmatched, changing nothing', () => {
    const changes = foldEvents([
      { ...event('d1', 'sign', T1, alice), envelope: undefined },
      event('d2', 'viewed', T1),
      event('d3', 'sign', T1), // no such signer on the envelope
    ])
    expect(Object.fromEntries(changes.outcomes)).toEqual({ d1: 'unmatched', d2: 'ignored', d3: 'ignored' })
    expect(changes.envelopes.size + changes.signers.size).toBe(0)
  })
})

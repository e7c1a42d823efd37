import { describe, expect, it } from 'vitest'
import type { EnvelopeStatus } from '../../src/vocabulary.js'
import {
  actionFor,
  isNoChange,
  signerEmailOf,
  transition,
  type EnvelopeState,
  type EsignAction,
  type SignerState,
} from '../../src/webhooks/esign-events.js'

const T1 = new Date('2026-05-01T10:00:00.000Z')
const T2 = new Date('2026-05-01T11:00:00.000Z')
const T3 = new Date('2026-05-01T12:00:00.000Z')

const pendingEnvelope: EnvelopeState = { status: 'pending', last_event_at: null }
const pendingSigner: SignerState = { status: 'pending', last_event_at: null }
const closedAt = (status: EnvelopeStatus, at: Date | null = T2): EnvelopeState => ({ status, last_event_at: at })

const action = (name: string): EsignAction => {
  const found = actionFor(name)
  if (!found) throw new Error(`no action for ${name}`)
  return found
}

describe('actionFor', () => {
  it('maps the provider events to actions', () => {
    expect(actionFor('sign')).toEqual({ kind: 'sign' })
    expect(actionFor('refusal')).toEqual({ kind: 'refusal' })
    for (const name of ['close', 'auto_close', 'document_closed']) expect(actionFor(name)).toEqual({ kind: 'finish', status: 'signed' })
    expect(actionFor('cancel')).toEqual({ kind: 'finish', status: 'cancelled' })
    expect(actionFor('deadline')).toEqual({ kind: 'finish', status: 'expired' })
  })

  it('knows no other event, not even inherited property names', () => {
    for (const name of ['upload', 'add_signer', 'SIGN', 'toString', '__proto__', 'constructor', '']) {
      expect(actionFor(name)).toBeUndefined()
    }
  })
})

describe('transition: envelope events', () => {
  it('completes a pending envelope on close, with completed_at = occurred_at', () => {
    expect(transition(pendingEnvelope, undefined, action('close'), T1)).toEqual({
      envelope: { status: 'signed', last_event_at: T1, completed_at: T1 },
    })
  })

  it('cancels and expires a pending envelope, without a completion time', () => {
    expect(transition(pendingEnvelope, undefined, action('cancel'), T1)).toEqual({ envelope: { status: 'cancelled', last_event_at: T1 } })
    expect(transition(pendingEnvelope, undefined, action('deadline'), T1)).toEqual({ envelope: { status: 'expired', last_event_at: T1 } })
  })

  it('never leaves a final state, whatever the event and its time', () => {
    for (const status of ['signed', 'refused', 'cancelled', 'expired'] as const) {
      for (const name of ['close', 'auto_close', 'document_closed', 'cancel', 'deadline', 'refusal']) {
        for (const at of [T1, T2, T3]) {
          expect(transition(closedAt(status), undefined, action(name), at).envelope).toBeUndefined()
        }
      }
    }
  })

  it('does not expire a completed envelope (deadline after close)', () => {
    expect(isNoChange(transition(closedAt('signed'), undefined, action('deadline'), T3))).toBe(true)
  })

  it('never lets an older event overwrite a newer one', () => {
    const seen: EnvelopeState = { status: 'pending', last_event_at: T2 }
    expect(isNoChange(transition(seen, undefined, action('cancel'), T1))).toBe(true)
    expect(transition(seen, undefined, action('cancel'), T2).envelope?.status).toBe('cancelled')
    expect(transition(seen, undefined, action('cancel'), T3).envelope?.status).toBe('cancelled')
  })

  it('ignores the signer on envelope events', () => {
    expect(transition(pendingEnvelope, pendingSigner, action('close'), T1).signer).toBeUndefined()
  })
})

describe('transition: signer events', () => {
  it('marks the signer signed at occurred_at and leaves the envelope alone', () => {
    expect(transition(pendingEnvelope, pendingSigner, action('sign'), T1)).toEqual({
      signer: { status: 'signed', last_event_at: T1, signed_at: T1 },
    })
  })

  it('changes nothing for an unknown signer', () => {
    expect(isNoChange(transition(pendingEnvelope, undefined, action('sign'), T1))).toBe(true)
  })

  it('is idempotent: a signed or refused signer stays as it is', () => {
    const signed: SignerState = { status: 'signed', last_event_at: T1 }
    const refused: SignerState = { status: 'refused', last_event_at: T1 }
    for (const signer of [signed, refused]) {
      for (const at of [T1, T2]) {
        expect(isNoChange(transition(pendingEnvelope, signer, action('sign'), at))).toBe(true)
        expect(transition(pendingEnvelope, signer, action('refusal'), at).signer).toBeUndefined()
      }
    }
  })

  it("compares with the signer's last event, not the envelope's", () => {
    const seenSigner: SignerState = { status: 'pending', last_event_at: T2 }
    expect(isNoChange(transition(pendingEnvelope, seenSigner, action('sign'), T1))).toBe(true)
    expect(transition(pendingEnvelope, seenSigner, action('sign'), T3).signer?.status).toBe('signed')
    const seenEnvelope: EnvelopeState = { status: 'pending', last_event_at: T3 }
    expect(transition(seenEnvelope, pendingSigner, action('sign'), T1).signer?.status).toBe('signed')
  })

  it('lands a late signature on an envelope that closed after it (out-of-order delivery)', () => {
    for (const status of ['signed', 'cancelled', 'expired', 'refused'] as const) {
      expect(transition(closedAt(status, T2), pendingSigner, action('sign'), T1)).toEqual({
        signer: { status: 'signed', last_event_at: T1, signed_at: T1 },
      })
      expect(transition(closedAt(status, T2), pendingSigner, action('sign'), T2).signer?.status).toBe('signed')
    }
  })

  it('takes no signer event that happened after the envelope closed', () => {
    for (const status of ['signed', 'cancelled', 'expired', 'refused'] as const) {
      expect(isNoChange(transition(closedAt(status, T2), pendingSigner, action('sign'), T3))).toBe(true)
      expect(isNoChange(transition(closedAt(status, null), pendingSigner, action('sign'), T1))).toBe(true)
    }
  })
})

describe('transition: refusal', () => {
  it('refuses the signer and the envelope', () => {
    expect(transition(pendingEnvelope, pendingSigner, action('refusal'), T1)).toEqual({
      signer: { status: 'refused', last_event_at: T1 },
      envelope: { status: 'refused', last_event_at: T1 },
    })
  })

  it('changes nothing when the refusal is stale for its signer (a sign came later, or the signer already decided)', () => {
    const signedAfter: SignerState = { status: 'signed', last_event_at: T2 }
    expect(isNoChange(transition(pendingEnvelope, signedAfter, action('refusal'), T1))).toBe(true)
    expect(isNoChange(transition(pendingEnvelope, signedAfter, action('refusal'), T3))).toBe(true)
    const seenLater: SignerState = { status: 'pending', last_event_at: T2 }
    expect(isNoChange(transition(pendingEnvelope, seenLater, action('refusal'), T1))).toBe(true)
  })

  it('refuses the envelope even when the signer is unknown', () => {
    expect(transition(pendingEnvelope, undefined, action('refusal'), T1)).toEqual({ envelope: { status: 'refused', last_event_at: T1 } })
  })

  it('never refuses within a completed envelope, but records an earlier refusal on a cancelled one', () => {
    expect(isNoChange(transition(closedAt('signed', T2), pendingSigner, action('refusal'), T1))).toBe(true)
    expect(transition(closedAt('cancelled', T2), pendingSigner, action('refusal'), T1)).toEqual({
      signer: { status: 'refused', last_event_at: T1 },
    })
  })
})

describe('signerEmailOf', () => {
  it("reads the provider's data.signer.email, lower-cased and trimmed", () => {
    expect(signerEmailOf({ signer: { email: ' Bob@Beta.Example ', name: 'Bob' } })).toBe('bob@beta.example')
  })

  it('accepts data.signer_email and data.email, in that order of preference', () => {
    expect(signerEmailOf({ signer_email: 'a@x.example', email: 'b@x.example' })).toBe('a@x.example')
    expect(signerEmailOf({ email: 'b@x.example' })).toBe('b@x.example')
    expect(signerEmailOf({ signer: { email: 'c@x.example' }, email: 'b@x.example' })).toBe('c@x.example')
  })

  it('finds nothing in other shapes', () => {
    for (const data of [undefined, null, 'bob@beta.example', [], {}, { signer: 'bob@beta.example' }, { signer: { email: 42 } }, { email: '  ' }]) {
      expect(signerEmailOf(data)).toBeUndefined()
    }
  })
})

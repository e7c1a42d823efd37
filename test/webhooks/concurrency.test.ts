import { describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'
import { envelopeState, notification, PENDING_ENVELOPE, postWebhook, storedDeliveries } from './helpers.js'

const context = useTestApp()

const T1 = '2026-05-01T10:00:00.000Z'
const T2 = '2026-05-01T11:00:00.000Z'
const T3 = '2026-05-01T12:00:00.000Z'

describe('POST /webhook/esign/{secret}/ under concurrency', () => {
  it('stores and applies a delivery posted 20 times at once exactly once', async () => {
    const body = JSON.stringify(notification('sign', T1, { signer: 'bob@beta.example' }))
    const responses = await Promise.all(Array.from({ length: 20 }, () => postWebhook(context.app, body)))
    expect(responses.map((response) => response.statusCode)).toEqual(Array(20).fill(201))
    const duplicates = responses.map((response) => response.json<{ duplicate: boolean }>().duplicate)
    expect(duplicates.filter((duplicate) => !duplicate)).toHaveLength(1)
    const deliveries = await storedDeliveries()
    expect(deliveries.map((delivery) => delivery.outcome)).toEqual(['applied'])
    expect((await envelopeState(PENDING_ENVELOPE)).signers[1]).toMatchObject({ status: 'signed', signed_at: new Date(T1) })
  })

  it('ends in the right state when a close and earlier signatures arrive together, out of order', async () => {
    const bodies = [
      notification('close', T3),
      notification('sign', T2, { signer: 'bob@beta.example' }),
      notification('sign', T1, { signer: 'alice@acme.example' }),
    ]
    const responses = await Promise.all(bodies.map((body) => postWebhook(context.app, body)))
    expect(responses.map((response) => response.statusCode)).toEqual([201, 201, 201])
    const state = await envelopeState(PENDING_ENVELOPE)
    expect(state).toMatchObject({ status: 'signed', completed_at: new Date(T3), last_event_at: new Date(T3) })
    expect(state.signers.map((signer) => [signer.status, signer.signed_at])).toEqual([
      ['signed', new Date(T1)],
      ['signed', new Date(T2)],
    ])
    expect((await storedDeliveries()).map((delivery) => delivery.outcome)).toEqual(['applied', 'applied', 'applied'])
  })

  it('applies exactly one of two conflicting final events that arrive together', async () => {
    const responses = await Promise.all([postWebhook(context.app, notification('cancel', T2)), postWebhook(context.app, notification('close', T3))])
    expect(responses.map((response) => response.statusCode)).toEqual([201, 201])
    const deliveries = await storedDeliveries()
    const applied = deliveries.filter((delivery) => delivery.outcome === 'applied')
    expect(applied).toHaveLength(1)
    const state = await envelopeState(PENDING_ENVELOPE)
    expect(state.status).toBe(applied[0]?.event_name === 'cancel' ? 'cancelled' : 'signed')
    expect(state.last_event_at).toEqual(applied[0]?.occurred_at)
  })

  it('marks a signer signed once when 20 different signature events arrive together', async () => {
    const times = Array.from({ length: 20 }, (_, index) => new Date(Date.parse(T1) + index * 1000).toISOString())
    const responses = await Promise.all(times.map((time) => postWebhook(context.app, notification('sign', time, { signer: 'bob@beta.example' }))))
    expect(responses.every((response) => response.json<{ duplicate: boolean }>().duplicate === false)).toBe(true)
    const deliveries = await storedDeliveries()
    expect(deliveries).toHaveLength(20)
    const applied = deliveries.filter((delivery) => delivery.outcome === 'applied')
    expect(applied).toHaveLength(1)
    expect((await envelopeState(PENDING_ENVELOPE)).signers[1]).toMatchObject({ status: 'signed', signed_at: applied[0]?.occurred_at })
  })

  it('answers a repeat of an earlier delivery as a duplicate when it arrives in one batch with new ones', async () => {
    const earlier = JSON.stringify(notification('sign', T1, { signer: 'bob@beta.example' }))
    expect((await postWebhook(context.app, earlier)).json()).toEqual({ received: true, duplicate: false })
    // Two batches in flight at most: the first ones go alone, the rest wait and go in together, the repeat among them
    // (on PostgreSQL; the embedded database answers each batch before the next request arrives).
    const viewed = (second: number) => JSON.stringify(notification('viewed', new Date(Date.parse(T2) + second * 1000).toISOString()))
    const bodies = [
      ...Array.from({ length: 10 }, (_, second) => viewed(second)),
      earlier,
      ...Array.from({ length: 5 }, (_, second) => viewed(10 + second)),
    ]
    const responses = await Promise.all(bodies.map((body) => postWebhook(context.app, body)))
    expect(responses.map((response) => [response.statusCode, response.json<{ duplicate: boolean }>().duplicate])).toEqual(
      bodies.map((body) => [201, body === earlier]),
    )
    const deliveries = await storedDeliveries()
    expect(deliveries).toHaveLength(16)
    expect(deliveries.filter((delivery) => delivery.outcome === 'applied')).toHaveLength(1)
    expect((await envelopeState(PENDING_ENVELOPE)).signers.map((signer) => signer.status)).toEqual(['pending', 'signed'])
  })
})

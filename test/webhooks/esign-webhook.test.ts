import { createHmac } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import {
  WEBHOOK_SECRET,
  envelopeState,
  notification,
  PENDING_ENVELOPE,
  postWebhook,
  sha256Hex,
  SIGNED_ENVELOPE,
  storedDeliveries,
} from './helpers.js'

const context = useTestApp()

const BOB = 'bob@beta.example'
const ALICE = 'alice@acme.example'
const T1 = '2026-05-01T10:00:00.000Z'
const T2 = '2026-05-01T11:00:00.000Z'
const T3 = '2026-05-01T12:00:00.000Z'

describe('POST /webhook/esign/{secret}/', () => {
  it('applies a sign event, which route 9 then shows (acceptance story)', async () => {
    const body = JSON.stringify(notification('sign', T1, { signer: BOB }))
    const response = await postWebhook(context.app, body)
    expect(response.statusCode).toBe(201)
    expect(response.json()).toEqual({ received: true, duplicate: false })

    const { access } = await obtainTokens(context.app, BOB, DEMO_PASSWORD)
    const documents = await context.app.inject({
      method: 'GET',
      url: `/api/v1/marketplace/${DEMO.roles.betaBuyer}/title/${DEMO.titles.t1}/documents`,
      headers: bearer(access),
    })
    const contract = documents.json<{ id: string; signature: { status: string; signers: unknown[] } }[]>()[2]
    expect(contract?.signature.status).toBe('pending')
    expect(contract?.signature.signers).toEqual([
      { name: 'Alice Almeida', email: ALICE, status: 'pending', signed_at: null },
      { name: 'Bob Barros', email: BOB, status: 'signed', signed_at: T1 },
    ])
  })

  it('stores the delivery as received, with its dedupe key and outcome', async () => {
    const body =
      `{"event":{"name":"sign","occurred_at":"2026-05-01T07:00:00-03:00","data":{"signer":{"email":"${BOB}"}}},` +
      `"document":{"key":"${PENDING_ENVELOPE}","status":"running","extra":[1,2]},"account":{"key":"x"}}`
    expect((await postWebhook(context.app, body)).statusCode).toBe(201)
    const [delivery, ...others] = await storedDeliveries()
    expect(others).toHaveLength(0)
    expect(Buffer.from(delivery!.raw_body).toString('utf8')).toBe(body)
    expect(delivery).toMatchObject({
      provider: 'esign',
      dedupe_key: sha256Hex(body),
      event_name: 'sign',
      envelope_key: PENDING_ENVELOPE,
      occurred_at: new Date(T1),
      outcome: 'applied',
    })
    expect(delivery?.processed_at).toBeInstanceOf(Date)
  })

  it('recognises a repeated delivery and changes nothing', async () => {
    const body = JSON.stringify(notification('sign', T1, { signer: BOB }))
    expect((await postWebhook(context.app, body)).json()).toEqual({ received: true, duplicate: false })
    const before = await envelopeState(PENDING_ENVELOPE)
    const again = await postWebhook(context.app, body, { trailing: '' })
    expect(again.statusCode).toBe(201)
    expect(again.json()).toEqual({ received: true, duplicate: true })
    expect(await storedDeliveries()).toHaveLength(1)
    expect(await envelopeState(PENDING_ENVELOPE)).toEqual(before)
  })

  it('refuses the signer and the envelope on refusal', async () => {
    await postWebhook(context.app, notification('refusal', T1, { signer: ALICE }))
    const state = await envelopeState(PENDING_ENVELOPE)
    expect(state.status).toBe('refused')
    expect(state.completed_at).toBeNull()
    expect(state.signers.map((signer) => signer.status)).toEqual(['refused', 'pending'])
  })

  it('completes the envelope on close, auto_close and document_closed', async () => {
    for (const name of ['close', 'auto_close', 'document_closed']) {
      const { db } = await testDatabase()
      await db
        .updateTable('signature_envelopes')
        .set({ status: 'pending', completed_at: null, last_event_at: null })
        .where('envelope_key', '=', PENDING_ENVELOPE)
        .execute()
      expect((await postWebhook(context.app, notification(name, T2))).statusCode).toBe(201)
      const state = await envelopeState(PENDING_ENVELOPE)
      expect([name, state.status, state.completed_at]).toEqual([name, 'signed', new Date(T2)])
    }
  })

  it('cancels, and a final state never goes back', async () => {
    await postWebhook(context.app, notification('cancel', T2))
    for (const name of ['close', 'deadline', 'refusal']) {
      expect((await postWebhook(context.app, notification(name, T3, { signer: BOB }))).statusCode).toBe(201)
    }
    const state = await envelopeState(PENDING_ENVELOPE)
    expect(state.status).toBe('cancelled')
    expect(state.last_event_at).toEqual(new Date(T2))
    expect(state.signers.map((signer) => signer.status)).toEqual(['pending', 'pending'])
    expect((await storedDeliveries()).map((delivery) => delivery.outcome)).toEqual(['applied', 'ignored', 'ignored', 'ignored'])
  })

  it('expires a pending envelope on deadline, but not a completed one', async () => {
    await postWebhook(context.app, notification('deadline', T1))
    expect((await envelopeState(PENDING_ENVELOPE)).status).toBe('expired')
    await postWebhook(context.app, notification('deadline', T3, { key: SIGNED_ENVELOPE }))
    expect((await envelopeState(SIGNED_ENVELOPE)).status).toBe('signed')
  })

  it("keeps the envelope pending when a signer's refusal is older than their signature (issue 15, item 5)", async () => {
    expect((await postWebhook(context.app, notification('sign', T2, { signer: BOB }))).statusCode).toBe(201)
    const refusal = await postWebhook(context.app, notification('refusal', T1, { signer: BOB }))
    expect(refusal.json()).toEqual({ received: true, duplicate: false })
    const state = await envelopeState(PENDING_ENVELOPE)
    expect(state.status).toBe('pending')
    expect(state.signers.map((signer) => signer.status)).toEqual(['pending', 'signed'])
    expect((await storedDeliveries()).map((delivery) => delivery.outcome)).toEqual(['applied', 'ignored'])
  })

  it('ends the same whichever of a signature and an older refusal arrives first, 20 of each at once', async () => {
    const events = Array.from({ length: 40 }, (_, index) =>
      index % 2 === 0
        ? notification('sign', T2, { signer: BOB, data: { signer: { email: BOB, name: `Bob ${index}` } } })
        : notification('refusal', T1, { signer: BOB, data: { signer: { email: BOB, name: `Bob ${index}` } } }),
    )
    const answers = await Promise.all(events.map((event) => postWebhook(context.app, event)))
    expect(answers.map((answer) => answer.statusCode)).toEqual(Array(40).fill(201))
    const state = await envelopeState(PENDING_ENVELOPE)
    // The signature (T2) is bob's last word whatever the arrival order: the refusal (T1) is stale.
    // Only a refusal that lands first can refuse; then bob's later signature finds him decided.
    if (state.signers[1]?.status === 'signed') expect(state.status).toBe('pending')
    else expect(state).toMatchObject({ status: 'refused', signers: [{ status: 'pending' }, { status: 'refused' }] })
  })

  it('ends in the right state when a later close arrives before an earlier signature', async () => {
    await postWebhook(context.app, notification('close', T3))
    await postWebhook(context.app, notification('sign', T1, { signer: ALICE }))
    await postWebhook(context.app, notification('sign', T2, { signer: BOB }))
    const state = await envelopeState(PENDING_ENVELOPE)
    expect(state).toMatchObject({ status: 'signed', completed_at: new Date(T3), last_event_at: new Date(T3) })
    expect(state.signers.map((signer) => [signer.status, signer.signed_at])).toEqual([
      ['signed', new Date(T1)],
      ['signed', new Date(T2)],
    ])
  })

  it('takes no signature dated after the envelope was cancelled', async () => {
    await postWebhook(context.app, notification('cancel', T2))
    const response = await postWebhook(context.app, notification('sign', T3, { signer: BOB }))
    expect(response.json()).toEqual({ received: true, duplicate: false })
    expect((await envelopeState(PENDING_ENVELOPE)).signers[1]?.status).toBe('pending')
  })

  it('finds the signer in the accepted shapes, case-insensitively', async () => {
    await postWebhook(context.app, notification('sign', T1, { data: { signer_email: ' Alice@Acme.Example' } }))
    await postWebhook(context.app, notification('sign', T2, { data: { email: BOB.toUpperCase() } }))
    expect((await envelopeState(PENDING_ENVELOPE)).signers.map((signer) => signer.status)).toEqual(['signed', 'signed'])
  })

  it('stores an event for an unknown signer as ignored', async () => {
    expect((await postWebhook(context.app, notification('sign', T1, { signer: 'mallory@evil.example' }))).statusCode).toBe(201)
    expect((await storedDeliveries())[0]?.outcome).toBe('ignored')
    expect((await envelopeState(PENDING_ENVELOPE)).signers.map((signer) => signer.status)).toEqual(['pending', 'pending'])
  })

  it('stores an unknown envelope key as unmatched and still answers 201', async () => {
    const response = await postWebhook(context.app, notification('close', T1, { key: 'no-such-envelope' }))
    expect(response.statusCode).toBe(201)
    expect(response.json()).toEqual({ received: true, duplicate: false })
    expect((await storedDeliveries()).map((delivery) => [delivery.envelope_key, delivery.outcome])).toEqual([['no-such-envelope', 'unmatched']])
  })

  it('stores an unknown event as ignored and changes nothing', async () => {
    const before = await envelopeState(PENDING_ENVELOPE)
    const response = await postWebhook(context.app, notification('add_signer', T1, { signer: BOB }))
    expect(response.statusCode).toBe(201)
    expect((await storedDeliveries())[0]?.outcome).toBe('ignored')
    expect(await envelopeState(PENDING_ENVELOPE)).toEqual(before)
  })

  it('accepts a body larger than the usual 16 KiB, up to 1 MiB', async () => {
    const body = { ...notification('sign', T1, { signer: BOB }), padding: 'x'.repeat(200 * 1024) }
    expect((await postWebhook(context.app, body)).statusCode).toBe(201)
    const tooLarge = { ...body, padding: 'x'.repeat(1024 * 1024) }
    problemOf(await postWebhook(context.app, tooLarge), 413, 'payload_too_large')
  })

  it('answers 404, exactly like an unknown route, for a wrong secret, and stores nothing', async () => {
    const body = notification('sign', T1, { signer: BOB })
    const unknownRoute = await context.app.inject({ method: 'POST', url: '/webhook/nothing-here/', payload: body })
    for (const secret of ['wrong-secret', `${WEBHOOK_SECRET}x`, WEBHOOK_SECRET.slice(0, -1), WEBHOOK_SECRET.toUpperCase(), 'demo-esign-secret']) {
      const response = await postWebhook(context.app, body, { secret })
      problemOf(response, 404, 'not_found')
      expect(response.body).toBe(unknownRoute.body)
    }
    // Before the body is read: a wrong secret with an unreadable body is still 404.
    problemOf(await postWebhook(context.app, '{not json', { secret: 'wrong-secret' }), 404, 'not_found')
    expect(await storedDeliveries()).toHaveLength(0)
  })

  it('answers 400 for bodies that are not a notification, and stores nothing', async () => {
    const invalid: [unknown, string][] = [
      [[], 'non_field_errors'],
      [{ document: { key: PENDING_ENVELOPE } }, 'event'],
      [{ event: { occurred_at: T1 }, document: { key: PENDING_ENVELOPE } }, 'event.name'],
      [{ event: { name: 'sign', occurred_at: 'yesterday' }, document: { key: PENDING_ENVELOPE } }, 'event.occurred_at'],
      [{ event: { name: 'sign', occurred_at: T1, data: 'bob' }, document: { key: PENDING_ENVELOPE } }, 'event.data'],
      [{ event: { name: 'sign', occurred_at: T1 }, document: { key: 42 } }, 'document.key'],
      [{ event: { name: 'sign', occurred_at: T1 } }, 'document'],
    ]
    for (const [body, field] of invalid) {
      const problem = problemOf(await postWebhook(context.app, body), 400, 'invalid')
      expect(Object.keys(problem.errors as object)).toContain(field)
    }
    problemOf(await postWebhook(context.app, '{"event": '), 400, 'parse_error')
    problemOf(await postWebhook(context.app, ''), 400, 'parse_error')
    const noBody = await context.app.inject({ method: 'POST', url: `/webhook/esign/${WEBHOOK_SECRET}/` })
    problemOf(noBody, 400, 'invalid')
    expect(await storedDeliveries()).toHaveLength(0)
  })

  it('answers 400, not 500, to a time JavaScript or PostgreSQL cannot hold, and stores nothing', async () => {
    // RFC 3339 takes a leap second; Date cannot. Year 0000 and a +10000 year are outside PostgreSQL's input.
    for (const time of ['2016-12-31T23:59:60Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59-23:59']) {
      const problem = problemOf(await postWebhook(context.app, notification('close', time)), 400, 'invalid')
      expect(problem.errors).toEqual({ 'event.occurred_at': ['Must be a valid date-time.'] })
    }
    expect((await postWebhook(context.app, notification('close', '2026-01-01T10:00:00+14:00'))).statusCode).toBe(201)
  })

  it('answers 400, not 500, to a NUL character in a stored or looked-up string, and stores nothing', async () => {
    const bodies = [
      notification('sign\u0000', T1, { signer: BOB }),
      notification('sign', T1, { key: `${PENDING_ENVELOPE}\u0000` }),
      notification('sign', T1, { signer: `${BOB}\u0000` }),
    ]
    for (const body of bodies) problemOf(await postWebhook(context.app, body), 400, 'invalid')
    expect(await storedDeliveries()).toHaveLength(0)
  })

  it('answers 400 to a NUL character arriving together with good deliveries, which are stored and applied', async () => {
    const good = [notification('sign', T1, { signer: BOB }), notification('sign', T2, { signer: ALICE })]
    const bad = notification('sign', T1, { signer: `${BOB}\u0000` })
    // Posted at once, they share a batch (after the first): the bad one must not fail the others.
    const [first, poisoned, second] = await Promise.all([good[0], bad, good[1]].map((body) => postWebhook(context.app, body)))
    expect([first?.statusCode, second?.statusCode]).toEqual([201, 201])
    problemOf(poisoned!, 400, 'invalid')
    expect((await storedDeliveries()).map((delivery) => delivery.outcome)).toEqual(['applied', 'applied'])
    expect((await envelopeState(PENDING_ENVELOPE)).signers.map((signer) => signer.status)).toEqual(['signed', 'signed'])
  })

  it('answers 400 to a lone surrogate in any string and stores nothing; a surrogate pair is kept whole', async () => {
    // JSON.stringify spells a lone surrogate as an escape (\udc00), as a provider's encoder may.
    const cases: [unknown, string][] = [
      [notification('sign', T1, { key: 'ﬀ\udc00ab' }), 'document.key'],
      [notification('sign', T1, { signer: `${BOB}\ud800` }), 'event.data.signer.email'],
      [{ ...notification('sign', T1, { signer: BOB }), ['extra\udfff']: 1 }, 'non_field_errors'],
    ]
    for (const [body, field] of cases) {
      const problem = problemOf(await postWebhook(context.app, body), 400, 'invalid')
      expect(Object.keys(problem.errors as object)).toEqual([field])
    }
    expect(await storedDeliveries()).toHaveLength(0)

    const emojiKey = 'envelope-\ud83d\ude00-ﬀ-ab'
    expect((await postWebhook(context.app, notification('sign', T1, { key: emojiKey }))).statusCode).toBe(201)
    expect((await storedDeliveries()).map((delivery) => delivery.envelope_key)).toEqual([emojiKey])
  })

  it('answers 415 for another media type', async () => {
    const body = JSON.stringify(notification('sign', T1, { signer: BOB }))
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      problemOf(await postWebhook(context.app, body, { headers: { 'content-type': type } }), 415, 'unsupported_media_type')
    }
    expect(await storedDeliveries()).toHaveLength(0)
  })

  it('accepts application/json with a charset parameter', async () => {
    const headers = { 'content-type': 'Application/JSON; charset=utf-8' }
    expect((await postWebhook(context.app, notification('sign', T1, { signer: BOB }), { headers })).statusCode).toBe(201)
  })

  it('needs no bearer token', async () => {
    const response = await postWebhook(context.app, notification('sign', T1, { signer: BOB }), { headers: bearer('not.a.token') })
    expect(response.statusCode).toBe(201)
  })
})

describe('POST /webhook/esign/{secret}/ with rotated secrets and an HMAC key', () => {
  const HMAC_KEY = 'test-hmac-key'
  let app: FastifyInstance
  beforeAll(async () => {
    app = await buildTestApp({ ESIGN_WEBHOOK_SECRETS: 'old-secret,new-secret', ESIGN_WEBHOOK_HMAC_KEY: HMAC_KEY })
  })
  afterAll(async () => {
    await app?.close()
  })

  const hmacOf = (body: string, key = HMAC_KEY) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`

  it('accepts a secret longer than 100 characters (the router took no longer path segment)', async () => {
    const secret = 'a1b2c3d4'.repeat(16)
    const longSecretApp = await buildTestApp({ ESIGN_WEBHOOK_SECRETS: secret })
    try {
      expect((await postWebhook(longSecretApp, notification('sign', T1, { signer: BOB }), { secret })).statusCode).toBe(201)
      problemOf(await postWebhook(longSecretApp, notification('sign', T1, { signer: BOB }), { secret: `${secret}x` }), 404, 'not_found')
    } finally {
      await longSecretApp.close()
    }
  })

  it('accepts every configured secret, and no longer the default one', async () => {
    const old = JSON.stringify(notification('sign', T1, { signer: ALICE }))
    const fresh = JSON.stringify(notification('sign', T2, { signer: BOB }))
    expect((await postWebhook(app, old, { secret: 'old-secret', headers: { 'content-hmac': hmacOf(old) } })).statusCode).toBe(201)
    expect((await postWebhook(app, fresh, { secret: 'new-secret', headers: { 'content-hmac': hmacOf(fresh) } })).statusCode).toBe(201)
    problemOf(await postWebhook(app, fresh, { secret: WEBHOOK_SECRET, headers: { 'content-hmac': hmacOf(fresh) } }), 404, 'not_found')
    expect((await envelopeState(PENDING_ENVELOPE)).signers.map((signer) => signer.status)).toEqual(['signed', 'signed'])
  })

  it('accepts the HMAC of the raw body, in either case of hex', async () => {
    const body = JSON.stringify(notification('sign', T1, { signer: BOB }))
    const upper = `sha256=${hmacOf(body).slice('sha256='.length).toUpperCase()}`
    const response = await postWebhook(app, body, { secret: 'new-secret', headers: { 'content-hmac': upper } })
    expect(response.statusCode).toBe(201)
  })

  it('answers 401 invalid_signature for a missing, malformed or wrong HMAC, and stores nothing', async () => {
    const body = JSON.stringify(notification('sign', T1, { signer: BOB }))
    const reformatted = JSON.stringify(notification('sign', T1, { signer: BOB }), null, 2)
    const wrong = [
      undefined,
      '',
      hmacOf(body).slice('sha256='.length),
      `sha1=${hmacOf(body).slice('sha256='.length)}`,
      hmacOf(body, 'another-key'),
      hmacOf(reformatted),
      `${hmacOf(body)}00`,
    ]
    for (const header of wrong) {
      const headers: Record<string, string> = header === undefined ? {} : { 'content-hmac': header }
      problemOf(await postWebhook(app, body, { secret: 'new-secret', headers }), 401, 'invalid_signature')
    }
    expect(await storedDeliveries()).toHaveLength(0)
  })

  it('checks the HMAC before parsing the body', async () => {
    problemOf(await postWebhook(app, '{not json', { secret: 'new-secret' }), 401, 'invalid_signature')
    const signed = await postWebhook(app, '{not json', { secret: 'new-secret', headers: { 'content-hmac': hmacOf('{not json') } })
    problemOf(signed, 400, 'parse_error')
  })
})

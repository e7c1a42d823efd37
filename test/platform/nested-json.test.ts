import { describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH } from '../../src/lib/well-formed-json.js'
import { problemOf, useTestApp } from '../helpers/app.js'
import { notification, postWebhook, storedDeliveries } from '../webhooks/helpers.js'

const ctx = useTestApp()

/** `inner` wrapped in `levels` arrays, as JSON text. */
const nested = (levels: number, inner: string) => `${'['.repeat(levels)}${inner}${']'.repeat(levels)}`

const post = (url: string, payload: string) => ctx.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload })

/** A provider's notification whose `event.data` goes on down to `depth` levels in all. */
function webhookBodyOfDepth(depth: number): string {
  const body = JSON.stringify(notification('sign', '2026-11-20T10:00:00Z', { data: { deep: 'HERE' } }))
  return body.replace('"HERE"', nested(depth - 3, '1')) // the body, event and data are three levels
}

describe(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`, () => {
  it('is 400 parse_error on routes 1 and 3, before any other check, naming the limit', async () => {
    for (const url of ['/api/auth/v1/token', '/api/auth/v1/token/refresh']) {
      const deep = await post(url, `{"email":"alice@acme.example","password":"x","refresh":${nested(MAX_JSON_DEPTH, '1')}}`)
      expect(problemOf(deep, 400, 'parse_error').detail).toContain(`deeper than ${MAX_JSON_DEPTH} levels`)
      // One level less is parsed and reaches validation.
      const fits = await post(url, `{"email":"alice@acme.example","password":${nested(MAX_JSON_DEPTH - 1, '1')},"refresh":1}`)
      problemOf(fits, 400, 'invalid')
    }
  })

  it('counts only brackets outside strings', async () => {
    const password = JSON.stringify(`\\"${'['.repeat(200)}`)
    const response = await post('/api/auth/v1/token', `{"email":"alice@acme.example","password":${password}}`)
    problemOf(response, 401, 'no_active_account')
  })

  it('answers a 16 KiB body 8,000 levels deep with a lone surrogate at the bottom in well under a millisecond of parsing', async () => {
    const body = `{"email":"a@b.example","password":${nested(8000, '"\\ud800"')}}`
    expect(body.length).toBeLessThan(16 * 1024)
    const started = performance.now()
    const responses = await Promise.all(Array.from({ length: 20 }, () => post('/api/auth/v1/token', body)))
    const elapsed = performance.now() - started
    for (const response of responses) problemOf(response, 400, 'parse_error')
    // Was ~50 ms each (the walk copied its path at every level); now a scan of the text.
    expect(elapsed / responses.length).toBeLessThan(10)
  })

  it('still names a lone surrogate deep inside a body within the limit', async () => {
    const response = await post('/api/auth/v1/token', `{"email":"alice@acme.example","password":{"a":${nested(MAX_JSON_DEPTH - 2, '"\\udfff"')}}}`)
    expect(problemOf(response, 400, 'invalid').errors).toEqual({
      [['password', 'a', ...Array.from({ length: MAX_JSON_DEPTH - 2 }, () => '0')].join('.')]: [expect.stringContaining('lone surrogate')],
    })
  })

  it('takes a webhook notification nested to the limit, and refuses one level more without storing it', async () => {
    expect((await postWebhook(ctx.app, webhookBodyOfDepth(MAX_JSON_DEPTH))).statusCode).toBe(201)
    const deeper = await postWebhook(ctx.app, webhookBodyOfDepth(MAX_JSON_DEPTH + 1).replace('2026-11-20T10:00:00Z', '2026-11-20T10:00:01Z'))
    problemOf(deeper, 400, 'parse_error')
    expect(await storedDeliveries()).toHaveLength(1)
  })
})

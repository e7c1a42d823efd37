import { describe, expect, it } from 'vitest'
import type { LogDestination } from '../../src/logging.js'
import { useTestApp } from '../helpers/app.js'
import { notification, PENDING_ENVELOPE, postWebhook } from './helpers.js'

const SECRET = 'Log-Test-Secret-7f3a9c'
const WRONG_SECRET = 'Wrong-Log-Test-Secret-2b8e1d'
const lines: string[] = []
const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }

// trace: every line the service can write, info's included.
const context = useTestApp({ LOG_LEVEL: 'trace', ESIGN_WEBHOOK_SECRETS: SECRET }, { logDestination })

describe('the webhook secret in logs', () => {
  it('never appears in a log line, whether the secret is right or wrong', async () => {
    lines.length = 0
    const body = notification('sign', '2026-05-01T10:00:00.000Z', { signer: 'bob@beta.example' })
    const requests = [
      postWebhook(context.app, body, { secret: SECRET }),
      postWebhook(context.app, body, { secret: SECRET, trailing: '' }),
      context.app.inject({ method: 'POST', url: `/webhook/esign/${SECRET}/?retry=1`, payload: body }),
      postWebhook(context.app, '{not json', { secret: SECRET }),
      postWebhook(context.app, 'text', { secret: SECRET, headers: { 'content-type': 'text/plain' } }),
      postWebhook(context.app, body, { secret: WRONG_SECRET }),
      postWebhook(context.app, body, { secret: WRONG_SECRET, trailing: '' }),
    ]
    const statuses = []
    for (const request of requests) statuses.push((await request).statusCode)
    expect(statuses).toEqual([201, 201, 201, 400, 415, 404, 404])

    const leaking = lines.filter((line) => line.includes(SECRET) || line.includes(WRONG_SECRET))
    expect(leaking).toEqual([])
    // The requests were logged, with the secret masked: the check above looked at real lines.
    const urls = lines
      .map((line) => JSON.parse(line) as { msg?: string; req?: { url?: string } })
      .filter((entry) => entry.msg === 'request completed')
      .flatMap((entry) => entry.req?.url ?? [])
    expect(urls).toContain('/webhook/esign/[REDACTED]/')
    expect(urls).toContain('/webhook/esign/[REDACTED]')
    expect(urls).toContain('/webhook/esign/[REDACTED]/?retry=[REDACTED]')
    expect(urls.filter((url) => url.startsWith('/webhook/'))).toHaveLength(requests.length)
    // What a delivery did goes on its request's one line.
    const outcomes = lines
      .map((line) => JSON.parse(line) as { msg?: string; result?: Record<string, unknown> })
      .filter((entry) => entry.msg === 'request completed' && entry.result !== undefined)
      .map((entry) => entry.result)
    expect(outcomes).toContainEqual({ event: 'sign', envelope_key: PENDING_ENVELOPE, duplicate: false, outcome: 'applied' })
  })

  it('masks a configured secret by value in near-miss URLs, whatever the route (issue 15, item 6)', async () => {
    lines.length = 0
    const body = notification('sign', '2026-05-01T10:00:00.000Z', { signer: 'bob@beta.example' })
    const nearMisses = [
      `/webhooks/esign/${SECRET}/`,
      `/webhook%2Fesign%2F${SECRET}`,
      `/webhook/ESIGN/${SECRET}`,
      `/webhook/esign/${SECRET.toUpperCase()}/`,
      `/api/v1/${encodeURIComponent(encodeURIComponent(SECRET))}`,
      `/api/company/v1/${SECRET.slice(0, 4)}%${SECRET.charCodeAt(4).toString(16)}${SECRET.slice(5)}/x`,
      `/health/live?${SECRET}`,
    ]
    const statuses = await Promise.all(nearMisses.map(async (url) => (await context.app.inject({ method: 'POST', url, payload: body })).statusCode))
    expect(statuses.every((status) => status === 404 || status === 405)).toBe(true)
    const completed = lines
      .map((line) => JSON.parse(line) as { msg?: string; req?: { url?: string } })
      .filter((entry) => entry.msg === 'request completed')
    expect(completed).toHaveLength(nearMisses.length)
    expect(lines.filter((line) => line.toLowerCase().includes(SECRET.toLowerCase()))).toEqual([])
  })

  it('masks a secret percent-encoded 4 or 5 times, and a path encoded past what is decoded (issue 26, item 5)', async () => {
    lines.length = 0
    const body = notification('sign', '2026-05-01T10:00:00.000Z', { signer: 'bob@beta.example' })
    const urls = [4, 5, 12].flatMap((times) => [
      `/webhooks/esign/${encodedTimes(SECRET, times)}/`,
      `/api/v1/${encodedTimes(SECRET, times)}`,
      `/${encodedTimes(`webhook/esign/${SECRET}`, times)}`,
      `/webhooks/${encodedTimes(SECRET, times)}?%ZZ`, // one malformed escape must not keep the rest encoded
    ])
    const statuses = await Promise.all(urls.map(async (url) => (await context.app.inject({ method: 'POST', url, payload: body })).statusCode))
    expect(statuses.every((status) => status === 404 || status === 405 || status === 400)).toBe(true)
    const logged = lines
      .map((line) => JSON.parse(line) as { msg?: string; req?: { url?: string } })
      .filter((entry) => entry.msg === 'request completed')
      .map((entry) => entry.req?.url ?? '')
    expect(logged).toHaveLength(urls.length)
    // Decoded as far as it goes, no logged URL holds the secret.
    expect(logged.filter((url) => decodedUntilStable(url).toLowerCase().includes(SECRET.toLowerCase()))).toEqual([])
  })
})

/** Every character percent-encoded, then the `%` encoded again `times - 1` times (`%4C` → `%254C` → …). */
function encodedTimes(text: string, times: number): string {
  let encoded = [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('')
  for (let round = 1; round < times; round += 1) encoded = encodeURIComponent(encoded)
  return encoded
}

function decodedUntilStable(text: string): string {
  for (;;) {
    const next = text.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run)
      } catch {
        return run
      }
    })
    if (next === text) return text
    text = next
  }
}

import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { LogDestination } from '../../src/logging.js'
import { AUDIT_EVENTS, emailDigest } from '../../src/observability/audit.js'
import { DEMO, DEMO_PASSWORD, obtainTokens, useTestApp } from '../helpers/app.js'
import { linkFor } from '../registration/links.js'
import { notification, postWebhook, WEBHOOK_SECRET } from '../webhooks/helpers.js'

const HMAC_KEY = 'audit-test-hmac-key-0123456789'
const lines: string[] = []
const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }
const context = useTestApp(
  { LOG_LEVEL: 'info', LOGIN_FAILURES_PER_CLIENT: '2', LOGIN_FAILURE_WINDOW: '60', ESIGN_WEBHOOK_HMAC_KEY: HMAC_KEY, TRUST_PROXY: '127.0.0.1' },
  { logDestination },
)

interface Line {
  level: number
  event?: string
  msg: string
  [field: string]: unknown
}

const WARN = 40
const INFO = 30
const parsed = (): Line[] => lines.map((line) => JSON.parse(line) as Line)
const eventLines = (event: string) => parsed().filter((line) => line.event === event)

/** No line holds any of these (passwords, tokens, secrets, the e-mail itself). */
function expectNowhere(...secrets: string[]): void {
  for (const secret of secrets) expect(lines.filter((line) => line.includes(secret))).toEqual([])
}

const CLIENT = '203.0.113.7'

describe('request lines (issue 19)', () => {
  it('carry the problem code of a 4xx answer', async () => {
    lines.length = 0
    const response = await context.app.inject({
      method: 'GET',
      url: '/api/company/v1/get-user-companies',
      headers: { 'x-request-id': 'four-oh-one' },
    })
    expect(response.statusCode).toBe(401)
    const line = parsed().find((entry) => entry.request_id === 'four-oh-one' && entry.msg === 'request completed')
    expect(line).toMatchObject({ level: INFO, code: 'not_authenticated', res: { statusCode: 401 } })
    expect(line!.trace_id).toMatch(/^[0-9a-f]{32}$/)
  })
})

describe('audit events (issue 19)', () => {
  it('logs a successful login once at info, with the user id and client address', async () => {
    lines.length = 0
    const tokens = await obtainTokens(context.app, 'alice@acme.example', DEMO_PASSWORD)
    const [event, ...more] = eventLines(AUDIT_EVENTS.loginSucceeded)
    expect(more).toEqual([])
    expect(event).toMatchObject({ level: INFO, user_id: DEMO.users.alice, client_address: '127.0.0.1', via: 'token' })
    expectNowhere(DEMO_PASSWORD, tokens.access, tokens.refresh)
  })

  it("logs a confirmed migrated account's first session (route 10) as a login at info, without the new password", async () => {
    lines.length = 0
    const response = await context.app.inject({
      method: 'POST',
      url: await linkFor('maria@legacy.example'),
      payload: { password: 'a-new-Password-77' },
    })
    expect(response.statusCode).toBe(201)
    const events = eventLines(AUDIT_EVENTS.loginSucceeded)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ level: INFO, user_id: DEMO.users.maria, via: 'confirmation' })
    expectNowhere('a-new-Password-77', response.json<{ refresh: string }>().refresh)
  })

  it('logs a throttled login once per refusal at warn, with a digest of the e-mail and never the password', async () => {
    lines.length = 0
    const email = 'Carol@Acme.example'
    const attempt = () =>
      context.app.inject({ method: 'POST', url: '/api/auth/v1/token', remoteAddress: CLIENT, payload: { email, password: 'wrong-password-9' } })
    const statuses = [(await attempt()).statusCode, (await attempt()).statusCode, (await attempt()).statusCode]
    expect(statuses).toEqual([401, 401, 429])
    const events = eventLines(AUDIT_EVENTS.loginThrottled)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ level: WARN, email_digest: emailDigest(email), client_address: CLIENT, reason: 'failures' })
    expect(events[0]!.email_digest).toMatch(/^[0-9a-f]{16}$/)
    expect(events[0]!.retry_after).toBeGreaterThan(0)
    expectNowhere('wrong-password-9', 'carol@acme.example', email)
  })

  it('logs a retried refresh token (within the grace) at info and a replayed one once at warn, with user, family and client address, never the token', async () => {
    const { refresh } = await obtainTokens(context.app, 'bob@beta.example', DEMO_PASSWORD)
    lines.length = 0
    const rotate = (token = refresh) =>
      context.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', remoteAddress: CLIENT, payload: { refresh: token } })
    const next = await rotate()
    expect(next.statusCode).toBe(200)
    expect((await rotate()).statusCode).toBe(200) // a retry: its successor is unused
    expect(eventLines(AUDIT_EVENTS.refreshTokenReplayed)).toEqual([])
    const successor = next.json<{ refresh: string }>().refresh
    const last = await rotate(successor)
    expect(last.statusCode).toBe(200)
    expect((await rotate()).statusCode).toBe(401) // its successor was used: a replay
    expect((await rotate()).statusCode).toBe(401) // the family is already revoked: no second event
    const familyId = (JSON.parse(Buffer.from(refresh.split('.')[1]!, 'base64url').toString()) as { fid: string }).fid
    const fields = { user_id: DEMO.users.bob, family_id: familyId, client_address: CLIENT }
    const retries = eventLines(AUDIT_EVENTS.refreshTokenRetried)
    expect(retries).toHaveLength(1)
    expect(retries[0]).toMatchObject({ level: INFO, ...fields })
    const events = eventLines(AUDIT_EVENTS.refreshTokenReplayed)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ level: WARN, ...fields })
    expectNowhere(refresh, successor, last.json<{ refresh: string }>().refresh)
  })

  it('logs a webhook rejected for its secret or its signature once each at warn, without the secret', async () => {
    lines.length = 0
    const body = notification('sign', '2026-05-01T10:00:00.000Z', { signer: 'bob@beta.example' })
    expect((await postWebhook(context.app, body, { secret: 'not-the-secret-5d1e' })).statusCode).toBe(404)
    expect((await postWebhook(context.app, body, { headers: { 'content-hmac': `sha256=${'0'.repeat(64)}` } })).statusCode).toBe(401)
    const good = `sha256=${createHmac('sha256', HMAC_KEY).update(JSON.stringify(body)).digest('hex')}`
    expect((await postWebhook(context.app, body, { headers: { 'content-hmac': good } })).statusCode).toBe(201)
    const events = eventLines(AUDIT_EVENTS.webhookRejected)
    expect(events.map((event) => [event.level, event.reason, event.provider])).toEqual([
      [WARN, 'secret', 'esign'],
      [WARN, 'signature', 'esign'],
    ])
    expectNowhere('not-the-secret-5d1e', HMAC_KEY, WEBHOOK_SECRET)
  })
})

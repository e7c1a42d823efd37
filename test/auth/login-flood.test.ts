import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { buildTestApp, DEMO_PASSWORD, problemOf } from '../helpers/app.js'
import { resetDatabase } from '../helpers/database.js'

// Issue 15 item 2: a flood of logins with random e-mails must not queue without bound in front of
// the hashing threads, nor come all from one address.
const randomLogin = (app: FastifyInstance, ip: string, index: number) =>
  app.inject({
    method: 'POST',
    url: index % 2 === 0 ? '/api/auth/v1/token' : '/api/auth/v1/login',
    payload: { email: `flood-${index}-${Math.random().toString(36).slice(2)}@nowhere.example`, password: `guess ${index}` },
    remoteAddress: ip,
  })

const rightfulLogin = (app: FastifyInstance) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/v1/token',
    payload: { email: 'alice@acme.example', password: DEMO_PASSWORD },
    remoteAddress: '192.0.2.250',
  })

const statuses = (responses: LightMyRequestResponse[]) => responses.map((response) => response.statusCode)

async function withApp(env: Record<string, string>, test: (app: FastifyInstance) => Promise<void>): Promise<void> {
  await resetDatabase()
  const app = await buildTestApp(env)
  try {
    await test(app)
  } finally {
    await app.close()
  }
}

describe('a flood of logins with random e-mails', () => {
  it('answers 503 service_unavailable with Retry-After at once beyond the hashing queue, from many addresses', async () => {
    await withApp({ PASSWORD_HASH_QUEUE_PER_THREAD: '1', LOGIN_FAILURES_PER_ADDRESS: '1000' }, async (app) => {
      const responses = await Promise.all(Array.from({ length: 60 }, (_, index) => randomLogin(app, `203.0.113.${index + 1}`, index)))
      const busy = responses.filter((response) => response.statusCode === 503)
      expect(statuses(responses).every((status) => status === 401 || status === 503)).toBe(true)
      expect(busy.length).toBeGreaterThan(0)
      for (const response of busy) {
        problemOf(response, 503, 'service_unavailable')
        expect(Number(response.headers['retry-after'])).toBeGreaterThan(0)
      }
      // Once the flood has passed, logins are checked again.
      expect((await rightfulLogin(app)).statusCode).toBe(200)
    })
  })

  it('limits one address whatever the e-mails, while a rightful login from elsewhere gets in', async () => {
    await withApp({ LOGIN_FAILURES_PER_ADDRESS: '20' }, async (app) => {
      const [flood, rightful] = await Promise.all([
        Promise.all(Array.from({ length: 60 }, (_, index) => randomLogin(app, '198.51.100.60', index))),
        rightfulLogin(app),
      ])
      expect(rightful.statusCode).toBe(200)
      const checked = flood.filter((response) => response.statusCode === 401)
      const throttled = flood.filter((response) => response.statusCode === 429)
      expect(checked.length + throttled.length).toBe(60)
      expect(checked.length).toBeLessThanOrEqual(20)
      for (const response of throttled) {
        problemOf(response, 429, 'throttled')
        expect(Number(response.headers['retry-after'])).toBeGreaterThan(0)
      }
    })
  })

  it('gives back the throttle counts of the logins refused as busy: their password was never checked', async () => {
    await withApp({ PASSWORD_HASH_QUEUE_PER_THREAD: '0', LOGIN_FAILURES_PER_ACCOUNT: '8' }, async (app) => {
      const guesses = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          app.inject({
            method: 'POST',
            url: '/api/auth/v1/token',
            payload: { email: 'alice@acme.example', password: `guess ${index}` },
            remoteAddress: `203.0.113.${index + 1}`,
          }),
        ),
      )
      const checked = guesses.filter((response) => response.statusCode === 401).length
      const busy = guesses.filter((response) => response.statusCode === 503).length
      expect(checked + busy + guesses.filter((response) => response.statusCode === 429).length).toBe(20)
      expect(busy).toBeGreaterThan(0)
      // Only the checked guesses count against the account's 8.
      expect((await rightfulLogin(app)).statusCode).toBe(checked < 8 ? 200 : 429)
    })
  })
})

import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { RedisCounterStore } from '../../src/auth/throttle/redis-counter-store.js'
import { buildTestApp, DEMO_PASSWORD, problemOf, useTestApp } from '../helpers/app.js'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'

// Issue 15 item 1: the guesses of a burst must be counted before their password is checked.
const LIMITS = { LOGIN_FAILURES_PER_CLIENT: '5', LOGIN_FAILURES_PER_ACCOUNT: '1000', LOGIN_FAILURES_PER_ADDRESS: '1000', LOGIN_FAILURE_WINDOW: '60' }
const ctx = useTestApp(LIMITS)

/** 40 guesses at once from one address for one e-mail, alternating routes 1 and 2; one carries the right password. */
function burst(app: FastifyInstance, email: string, ip: string, rightAt = -1): Promise<LightMyRequestResponse[]> {
  return Promise.all(
    Array.from({ length: 40 }, (_, index) =>
      app.inject({
        method: 'POST',
        url: index % 2 === 0 ? '/api/auth/v1/token' : '/api/auth/v1/login',
        payload: { email, password: index === rightAt ? DEMO_PASSWORD : `guess ${index}` },
        remoteAddress: ip,
      }),
    ),
  )
}

function expectAtMostFiveChecked(responses: LightMyRequestResponse[], most = 5): void {
  const checked = responses.filter((response) => response.statusCode === 401 || response.statusCode === 200)
  const throttled = responses.filter((response) => response.statusCode === 429)
  expect(checked.length + throttled.length).toBe(responses.length)
  expect(checked.length).toBeLessThanOrEqual(most)
  expect(checked.length).toBeGreaterThan(0)
  for (const response of throttled) {
    problemOf(response, 429, 'throttled')
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0)
  }
}

describe('a burst of concurrent guesses for one e-mail', () => {
  it('lets at most the per-client limit reach the password check, on routes 1 and 2 alike', async () => {
    const responses = await burst(ctx.app, 'alice@acme.example', '198.51.100.40', 39)
    expectAtMostFiveChecked(responses)
    // The right password sent last in the burst did not get through behind the wrong ones.
    expect(responses[39]!.statusCode).toBe(429)
    problemOf(
      await ctx.app.inject({
        method: 'POST',
        url: '/api/auth/v1/token',
        payload: { email: 'alice@acme.example', password: DEMO_PASSWORD },
        remoteAddress: '198.51.100.40',
      }),
      429,
      'throttled',
    )
  })

  it('counts an unknown e-mail the same way', async () => {
    expectAtMostFiveChecked(await burst(ctx.app, 'ghost@acme.example', '198.51.100.41'))
  })
})

describe('a burst with the counters in Redis', () => {
  const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 })
  const prefix = `test-login-burst:${process.pid}:${Date.now()}:`
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`).catch(() => [])
    if (keys.length) await redis.del(...keys)
    await redis.quit().catch(() => undefined)
  })

  it('lets at most the per-client limit through across two instances sharing Redis', async () => {
    await redis.connect()
    const first = await buildTestApp(LIMITS, { counterStore: new RedisCounterStore(redis, prefix) })
    const second = await buildTestApp(LIMITS, { counterStore: new RedisCounterStore(redis, prefix) })
    try {
      const [a, b] = await Promise.all([burst(first, 'ghost@acme.example', '198.51.100.42'), burst(second, 'ghost@acme.example', '198.51.100.42')])
      expectAtMostFiveChecked([...a, ...b])
      // The owner's login first among them clears the client's failures when it succeeds: at most
      // 4 guesses failed before it, and 5 after.
      const withOwner = await burst(first, 'alice@acme.example', '198.51.100.43', 0)
      expect(withOwner[0]!.statusCode).toBe(200)
      expectAtMostFiveChecked(withOwner, 1 + 4 + 5)
    } finally {
      await Promise.all([first.close(), second.close()])
    }
  })
})

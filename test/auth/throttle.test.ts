import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { RedisCounterStore } from '../../src/auth/throttle/redis-counter-store.js'
import { buildTestApp, DEMO_PASSWORD, problemOf, useTestApp } from '../helpers/app.js'

const ctx = useTestApp({ LOGIN_FAILURES_PER_CLIENT: '3', LOGIN_FAILURES_PER_ACCOUNT: '5', LOGIN_FAILURE_WINDOW: '60' })

const attempt = (password: string, ip = '198.51.100.7', email = 'alice@acme.example', app = ctx.app) =>
  app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email, password }, remoteAddress: ip })

describe('brute-force limits on the token and login routes', () => {
  it('answers 429 with Retry-After once a client has failed too often for one e-mail', async () => {
    for (let i = 0; i < 3; i += 1) problemOf(await attempt('wrong'), 401, 'no_active_account')
    const blocked = await attempt(DEMO_PASSWORD)
    problemOf(blocked, 429, 'throttled')
    const retryAfter = Number(blocked.headers['retry-after'])
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(60)
    // The login route shares the counters.
    const login = await ctx.app.inject({
      method: 'POST',
      url: '/api/auth/v1/login',
      payload: { email: 'alice@acme.example', password: DEMO_PASSWORD },
      remoteAddress: '198.51.100.7',
    })
    problemOf(login, 429, 'throttled')
  })

  it('does not block another client, and a success clears the client counter', async () => {
    for (let i = 0; i < 2; i += 1) await attempt('wrong')
    expect((await attempt(DEMO_PASSWORD)).statusCode).toBe(200)
    for (let i = 0; i < 2; i += 1) problemOf(await attempt('wrong'), 401, 'no_active_account')
    expect((await attempt(DEMO_PASSWORD, '198.51.100.8')).statusCode).toBe(200)
  })

  it('limits failures per account from any address', async () => {
    for (let i = 0; i < 5; i += 1) await attempt('wrong', `203.0.113.${i + 1}`)
    problemOf(await attempt(DEMO_PASSWORD, '203.0.113.99'), 429, 'throttled')
  })

  it('counts unknown e-mails the same way, without telling them apart', async () => {
    for (let i = 0; i < 3; i += 1) problemOf(await attempt('x', undefined, 'ghost@acme.example'), 401, 'no_active_account')
    problemOf(await attempt('x', undefined, 'ghost@acme.example'), 429, 'throttled')
  })

  it('lets the owner in again once the window has passed', async () => {
    const app = await buildTestApp({ LOGIN_FAILURES_PER_CLIENT: '1', LOGIN_FAILURE_WINDOW: '1' })
    try {
      await attempt('wrong', undefined, undefined, app)
      problemOf(await attempt(DEMO_PASSWORD, undefined, undefined, app), 429, 'throttled')
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      expect((await attempt(DEMO_PASSWORD, undefined, undefined, app)).statusCode).toBe(200)
    } finally {
      await app.close()
    }
  })
})

describe('with REDIS_URL, counters shared between instances', () => {
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  afterAll(async () => {
    await redis.quit().catch(() => undefined)
  })

  it('blocks on a second instance after failures on the first', async () => {
    await redis.connect()
    const prefix = `test-login-failures:${process.pid}:${Date.now()}:`
    const env = { LOGIN_FAILURES_PER_CLIENT: '2', LOGIN_FAILURE_WINDOW: '60' }
    const first = await buildTestApp(env, { counterStore: new RedisCounterStore(redis, prefix) })
    const second = await buildTestApp(env, { counterStore: new RedisCounterStore(redis, prefix) })
    try {
      for (let i = 0; i < 2; i += 1) problemOf(await attempt('wrong', undefined, undefined, first), 401, 'no_active_account')
      const blocked = await attempt(DEMO_PASSWORD, undefined, undefined, second)
      problemOf(blocked, 429, 'throttled')
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0)
    } finally {
      await Promise.all([first.close(), second.close()])
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length) await redis.del(...keys)
    }
  })

  it('uses Redis when the service is configured with REDIS_URL', async () => {
    const app = await buildTestApp({ REDIS_URL: redisUrl, LOGIN_FAILURES_PER_CLIENT: '1' }, { counterStore: undefined })
    try {
      const ip = `192.0.2.${Math.floor(Math.random() * 200) + 1}`
      const email = `nobody-${process.pid}-${Date.now()}@acme.example`
      await attempt('wrong', ip, email, app)
      // Refused for the failure counted on Redis (the rest of its window), not for an attempt left in flight (1 s).
      const refused = await attempt('wrong', ip, email, app)
      problemOf(refused, 429, 'throttled')
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(2)
      expect((await redis.keys('login-failures:*')).length).toBeGreaterThan(0)
      // Each success gives its place back on Redis: the next login of the same client is not held behind it.
      for (let i = 0; i < 2; i += 1) expect((await attempt(DEMO_PASSWORD, ip, 'alice@acme.example', app)).statusCode).toBe(200)
    } finally {
      await app.close()
    }
  })

  it('keeps logins working and limited on this instance while Redis is down', async () => {
    const app = await buildTestApp({ REDIS_URL: 'redis://127.0.0.1:1', LOGIN_FAILURES_PER_CLIENT: '1' }, { counterStore: undefined })
    try {
      expect((await attempt(DEMO_PASSWORD, undefined, undefined, app)).statusCode).toBe(200)
      problemOf(await attempt('wrong', undefined, undefined, app), 401, 'no_active_account')
      problemOf(await attempt(DEMO_PASSWORD, undefined, undefined, app), 429, 'throttled')
    } finally {
      await app.close()
    }
  })
})

describe('the counters of one process, bounded', () => {
  // Room for three failure counters: one attempt's own (client, account, address).
  const bounded = () => buildTestApp({ LOGIN_FAILURES_PER_CLIENT: '1', LOGIN_FAILURE_WINDOW: '60' }, { counterStore: new MemoryCounterStore(3) })

  it('forget the failures below their limit to make room, rather than grow, and keep those at it', async () => {
    const app = await bounded()
    try {
      problemOf(await attempt('wrong', '198.51.100.31', 'alice@acme.example', app), 401, 'no_active_account')
      problemOf(await attempt(DEMO_PASSWORD, '198.51.100.31', 'alice@acme.example', app), 429, 'throttled')
      // Another client's failure on another account fills the room: alice's counters below their limit go first.
      problemOf(await attempt('wrong', '198.51.100.32', 'bob@beta.example', app), 401, 'no_active_account')
      problemOf(await attempt(DEMO_PASSWORD, '198.51.100.31', 'alice@acme.example', app), 429, 'throttled')
      problemOf(await attempt(DEMO_PASSWORD, '198.51.100.32', 'bob@beta.example', app), 429, 'throttled')
    } finally {
      await app.close()
    }
  })
})

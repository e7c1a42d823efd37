import { Redis } from 'ioredis'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, describe, expect, it } from 'vitest'
import type { CounterStore } from '../../src/lib/counter-store.js'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { RedisCounterStore } from '../../src/auth/throttle/redis-counter-store.js'
import { buildTestApp, DEMO_PASSWORD, problemOf, useTestApp } from '../helpers/app.js'

// Issue 27 item 2: a burst of the rightful owner's logins is served; a burst of guesses is still
// limited; Retry-After is the real wait.
const BURST_WAIT = '8s'
const DEMO_EMAILS = ['alice@acme.example', 'bob@beta.example', 'carol@gamma.example', 'dave@delta.example', 'erin@acme.example']

interface Attempt {
  email?: string
  password?: string
  ip?: string
}

/** Concurrent logins, alternating routes 1 and 2. */
const logins = (app: FastifyInstance, attempts: Attempt[]): Promise<LightMyRequestResponse[]> =>
  Promise.all(
    attempts.map(({ email = 'alice@acme.example', password = DEMO_PASSWORD, ip = '198.51.100.70' }, index) =>
      app.inject({
        method: 'POST',
        url: index % 2 === 0 ? '/api/auth/v1/token' : '/api/auth/v1/login',
        payload: { email, password },
        remoteAddress: ip,
      }),
    ),
  )

const times = (count: number, attempt: (index: number) => Attempt = () => ({})): Attempt[] =>
  Array.from({ length: count }, (_, index) => attempt(index))

const statuses = (responses: LightMyRequestResponse[]) => responses.map((response) => response.statusCode)

/** The Retry-After of each 429, checked to be a `throttled` problem. */
const retryAfters = (responses: LightMyRequestResponse[]): number[] =>
  responses
    .filter((response) => response.statusCode === 429)
    .map((response) => {
      problemOf(response, 429, 'throttled')
      return Number(response.headers['retry-after'])
    })

/**
 * 40 concurrent wrong passwords: at most the per-client limit (5) reached the check (401), every other
 * was refused 429 with the rest of a window that started at the first failure, moments ago.
 */
function expectGuessesLimited(responses: LightMyRequestResponse[]): void {
  const checked = responses.filter((response) => response.statusCode === 401)
  expect(checked.length).toBeGreaterThan(0)
  expect(checked.length).toBeLessThanOrEqual(5)
  const waits = retryAfters(responses)
  expect(waits.length + checked.length).toBe(40)
  for (const wait of waits) expect(wait).toBeGreaterThan(15 * 60 - 10)
  for (const wait of waits) expect(wait).toBeLessThanOrEqual(15 * 60)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("a burst of one partner account's logins", () => {
  // The defaults: 5 per (address, e-mail), 20 per account, 30 per address, a 15-minute window; a
  // longer wait than the default 5 s for the attempts in flight, as the suite shares its CPUs.
  const ctx = useTestApp({ LOGIN_FAILURE_WINDOW: '15m', LOGIN_BURST_WAIT: BURST_WAIT })

  it('serves 20 concurrent correct logins from one address, all 200 within seconds', async () => {
    const started = Date.now()
    const responses = await logins(ctx.app, times(20))
    expect(statuses(responses)).toEqual(Array(20).fill(200))
    expect(Date.now() - started).toBeLessThan(10_000)
  })

  it('serves 25 concurrent correct logins of one account from 25 addresses (above the per-account limit)', async () => {
    const responses = await logins(
      ctx.app,
      times(25, (index) => ({ ip: `203.0.113.${index + 1}` })),
    )
    expect(statuses(responses)).toEqual(Array(25).fill(200))
  })

  it('still lets at most 5 of 40 concurrent wrong passwords be checked, the rest 429 for the real wait', async () => {
    const responses = await logins(
      ctx.app,
      times(40, (index) => ({ password: `guess ${index}` })),
    )
    expectGuessesLimited(responses)
  })
})

describe('a burst from one address for several accounts', () => {
  const ctx = useTestApp({ LOGIN_FAILURES_PER_ADDRESS: '4', LOGIN_BURST_WAIT: BURST_WAIT })

  it('serves 20 concurrent correct logins of five users from one address (above the per-address limit)', async () => {
    const responses = await logins(
      ctx.app,
      times(20, (index) => ({ email: DEMO_EMAILS[index % 5] })),
    )
    expect(statuses(responses)).toEqual(Array(20).fill(200))
  })
})

describe('Retry-After', () => {
  it('is a second or two when only attempts in flight hold the limit, never the whole window', async () => {
    // No waiting for the attempts in flight: those beyond the limit are refused at once.
    const app = await buildTestApp({ LOGIN_BURST_WAIT: '0', LOGIN_FAILURE_WINDOW: '15m' })
    try {
      const responses = await logins(app, times(20))
      const waits = retryAfters(responses)
      expect(waits.length).toBeGreaterThan(0)
      for (const wait of waits) expect(wait).toBeGreaterThanOrEqual(1)
      for (const wait of waits) expect(wait).toBeLessThanOrEqual(2)
      // The burst failed nothing: the owner logs in at once.
      expect(statuses(await logins(app, times(1)))).toEqual([200])
    } finally {
      await app.close()
    }
  })

  it('is the time until the window lets one more attempt through, per client and per account', async () => {
    const app = await buildTestApp({ LOGIN_FAILURES_PER_CLIENT: '3', LOGIN_FAILURES_PER_ACCOUNT: '6', LOGIN_FAILURE_WINDOW: '3s' })
    try {
      // Per client: 3 failures, then a burst of the right password is told the rest of the window.
      const client = await logins(
        app,
        times(20, (index) => ({ password: index < 3 ? `guess ${index}` : DEMO_PASSWORD })),
      )
      expect(statuses(client).filter((status) => status === 401).length).toBe(3)
      await sleep(1_000)
      const clientWaits = retryAfters(await logins(app, times(5)))
      expect(clientWaits).toHaveLength(5)
      for (const wait of clientWaits) expect(wait).toBeLessThanOrEqual(2)
      await sleep(Math.max(...clientWaits) * 1_000)
      expect(statuses(await logins(app, times(1)))).toEqual([200])

      // Per account: 6 failures from six addresses block a seventh address until the window ends.
      await logins(
        app,
        times(6, (index) => ({ password: `guess ${index}`, ip: `203.0.113.${index + 1}` })),
      )
      const accountWaits = retryAfters(
        await logins(
          app,
          times(5, () => ({ ip: '203.0.113.99' })),
        ),
      )
      expect(accountWaits).toHaveLength(5)
      for (const wait of accountWaits) expect(wait).toBeLessThanOrEqual(3)
      await sleep(Math.max(...accountWaits) * 1_000)
      expect(
        statuses(
          await logins(
            app,
            times(1, () => ({ ip: '203.0.113.99' })),
          ),
        ),
      ).toEqual([200])
    } finally {
      await app.close()
    }
  })
})

describe('a burst with the counters in Redis, two instances', () => {
  const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 })
  const prefix = `test-login-burst-27:${process.pid}:${Date.now()}:`
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`).catch(() => [])
    if (keys.length) await redis.del(...keys)
    await redis.quit().catch(() => undefined)
  })

  it('serves 20 concurrent correct logins split between the instances, and limits 40 wrong ones to 5 checked', async () => {
    await redis.connect()
    const env = { LOGIN_BURST_WAIT: BURST_WAIT }
    const first = await buildTestApp(env, { counterStore: new RedisCounterStore(redis, prefix) })
    const second = await buildTestApp(env, { counterStore: new RedisCounterStore(redis, prefix) })
    try {
      const [a, b] = await Promise.all([logins(first, times(10)), logins(second, times(10))])
      expect(statuses([...a, ...b])).toEqual(Array(20).fill(200))

      const wrong = (index: number) => ({ password: `guess ${index}`, ip: '198.51.100.71' })
      const [c, d] = await Promise.all([
        logins(first, times(20, wrong)),
        logins(
          second,
          times(20, (index) => wrong(index + 20)),
        ),
      ])
      const responses = [...c, ...d]
      expectGuessesLimited(responses)
    } finally {
      await Promise.all([first.close(), second.close()])
    }
  })

  it('ends the place of an attempt whose instance died mid-check with its lease', async () => {
    await expectLeaseEnds(new RedisCounterStore(redis, prefix))
  })
})

describe('the counters in memory', () => {
  it('end the place of an attempt never settled with its lease too', async () => {
    await expectLeaseEnds(new MemoryCounterStore())
  })
})

/** An attempt never settled holds its place for its lease only. */
async function expectLeaseEnds(store: CounterStore): Promise<void> {
  const counters = [{ key: `lease-${Date.now()}`, limit: 1 }]
  expect(await store.reserve('dead instance', counters, 300, 60_000)).toEqual({ outcome: 'reserved' })
  expect(await store.reserve('next', counters, 300, 60_000)).toMatchObject({ outcome: 'busy', key: counters[0]!.key })
  await sleep(400)
  expect(await store.reserve('next', counters, 300, 60_000)).toEqual({ outcome: 'reserved' })
  await store.settle('next', [{ ...counters[0]!, settlement: 'failed' }], 60_000)
  const blocked = await store.reserve('third', counters, 300, 60_000)
  expect(blocked.outcome).toBe('blocked')
  const { waitMs } = blocked as { waitMs: number }
  expect(waitMs).toBeGreaterThan(59_000)
  expect(waitMs).toBeLessThanOrEqual(60_000)
}

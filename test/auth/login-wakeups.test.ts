import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import { afterAll, describe, expect, it } from 'vitest'
import { FallbackCounterStore } from '../../src/auth/throttle/fallback-counter-store.js'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { RedisCounterStore } from '../../src/auth/throttle/redis-counter-store.js'
import { buildTestApp, DEMO_PASSWORD, problemOf } from '../helpers/app.js'
import { resetDatabase } from '../helpers/database.js'

// Issue 33 item 10: logins waiting for the attempts in flight ahead of them must be woken when one
// ends, not poll Redis. Counted: the throttle's Lua scripts run on this file's keys (MONITOR).
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
// Waits long enough for a loaded machine's burst: what is counted is runs, not time.
const ENV = { LOGIN_BURST_WAIT: '25s', HANDLER_TIMEOUT: '30s' }
const BURST = 40

/** The scripts Redis runs on keys under `prefix` while `work` runs. */
async function scriptRuns(prefix: string, work: () => Promise<void>): Promise<number> {
  const monitor = await new Redis(REDIS_URL, { lazyConnect: true }).monitor()
  let runs = 0
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (/^eval(sha)?$/i.test(args[0] ?? '') && args.some((arg) => arg.startsWith(prefix))) runs++
  })
  try {
    await work()
    // MONITOR's lines arrive apart from the replies: give the last ones a moment.
    await new Promise((resolve) => setTimeout(resolve, 200))
    return runs
  } finally {
    monitor.disconnect()
  }
}

/** `count` logins of one account from one address, spread over `apps`, all at once, answered `status` but the first 5 (`401` for guesses). */
async function burst(apps: FastifyInstance[], count: number, password = DEMO_PASSWORD): Promise<void> {
  const responses = await Promise.all(
    Array.from({ length: count }, (_, index) =>
      apps[index % apps.length]!.inject({
        method: 'POST',
        url: index % 2 === 0 ? '/api/auth/v1/token' : '/api/auth/v1/login',
        payload: { email: 'bob@beta.example', password },
        remoteAddress: '198.51.100.90',
      }),
    ),
  )
  const statuses = responses.map((response) => response.statusCode)
  if (password === DEMO_PASSWORD) expect(statuses).toEqual(Array(count).fill(200))
  else expect(statuses.sort()).toEqual([...Array(5).fill(401), ...Array(count - 5).fill(429)])
}

describe('logins waiting for a burst ahead of them, counters in Redis', () => {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  const prefixes: string[] = []
  const prefix = () => {
    prefixes.push(`test-h33-wakeups:${process.pid}:${Date.now()}:${prefixes.length}:`)
    return prefixes.at(-1)!
  }
  /** Redis before this process's own counters, as the service builds its store with REDIS_URL (src/app.ts). */
  const storeErrors: unknown[] = []
  const sharedStore = (keys: string) =>
    new FallbackCounterStore(new RedisCounterStore(redis, keys), new MemoryCounterStore(), (error) => storeErrors.push(error))
  afterAll(async () => {
    for (const each of prefixes) {
      const keys = await redis.keys(`${each}*`).catch(() => [])
      if (keys.length) await redis.del(...keys)
    }
    await redis.quit().catch(() => undefined)
  })

  // Each login runs one script to take its place and, once checked, one to give it back; a waiter
  // runs one more when woken, once per place given back (and per instance that hears of it). Waiters
  // polling every 10-200 ms and all woken at each end ran 14 per login here (5.5 for guesses).
  for (const [instances, password, most] of [
    [1, DEMO_PASSWORD, 4],
    [2, DEMO_PASSWORD, 4],
    // 5 guesses checked, then their failures fill the counter: every waiter learns it at once.
    [2, 'a guess', 3],
  ] as const) {
    const what = password === DEMO_PASSWORD ? 'correct logins' : 'guesses'
    it(`serves ${BURST} concurrent ${what} from one address on ${instances} instance(s) with at most ${most} script runs per login`, async () => {
      await redis.connect().catch(() => undefined)
      await resetDatabase()
      const keys = prefix()
      const apps = await Promise.all(Array.from({ length: instances }, () => buildTestApp(ENV, { counterStore: sharedStore(keys) })))
      try {
        const started = performance.now()
        const runs = await scriptRuns(keys, () => burst(apps, BURST, password))
        console.log(
          `${instances} instance(s), ${BURST} ${what} (${BURST - 5} waiting): ${runs} scripts, ${(runs / BURST).toFixed(1)} per login, in ${Math.round(performance.now() - started)} ms`,
        )
        expect(runs).toBeGreaterThanOrEqual(2 * BURST - 5)
        expect(runs).toBeLessThanOrEqual(most * BURST)
        // Redis answered throughout: nothing fell back to this process's counters.
        expect(storeErrors).toEqual([])
      } finally {
        await Promise.all(apps.map((app) => app.close()))
      }
    })
  }

  it('answers a waiter whose release never comes (the instance holding the place died) at LOGIN_BURST_WAIT, 429 for a second', async () => {
    await redis.connect().catch(() => undefined)
    await resetDatabase()
    const store = new RedisCounterStore(redis, prefix())
    const app = await buildTestApp({ LOGIN_BURST_WAIT: '2s', LOGIN_FAILURES_PER_ADDRESS: '1' }, { counterStore: store })
    try {
      // The address's one place, taken by an attempt that will never end but with its lease.
      expect(await store.reserve('dead instance', [{ key: 'address:198.51.100.91', limit: 1 }], 30_000, 60_000)).toEqual({ outcome: 'reserved' })
      const started = performance.now()
      const login = await app.inject({
        method: 'POST',
        url: '/api/auth/v1/token',
        payload: { email: 'bob@beta.example', password: DEMO_PASSWORD },
        remoteAddress: '198.51.100.91',
      })
      const elapsed = performance.now() - started
      problemOf(login, 429, 'throttled')
      expect(login.headers['retry-after']).toBe('1')
      expect(elapsed).toBeGreaterThanOrEqual(1_900)
      expect(elapsed).toBeLessThan(2_000 + 3_000)
    } finally {
      await app.close()
    }
  })
})

import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import type { LogDestination } from '../../src/logging.js'
import { buildTestApp, DEMO_PASSWORD, problemOf } from '../helpers/app.js'
import { resetDatabase } from '../helpers/database.js'

// Issue 42 item 9: a full in-memory store evicts by value, not age: a blocked counter and a
// familiar place outlive a flood of fresh keys, and each eviction is counted and logged.
const ENV = { TRUST_PROXY: 'true', LOGIN_FAILURES_PER_ACCOUNT: '3', LOGIN_FAILURE_WINDOW: '60', LOG_LEVEL: 'warn' }

const login = (app: FastifyInstance, address: string, email: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/auth/v1/token', headers: { 'x-forwarded-for': address }, payload: { email, password } })

const evictions = async (app: FastifyInstance, kind: string): Promise<number> => {
  const series = `login_counter_evictions_total{kind="${kind}"} `
  const line = (await app.metrics.registry.metrics()).split('\n').find((candidate) => candidate.startsWith(series))
  return line === undefined ? 0 : Number(line.slice(series.length))
}

async function withApp(maxKeys: number, test: (app: FastifyInstance, lines: string[]) => Promise<void>): Promise<void> {
  await resetDatabase()
  const lines: string[] = []
  const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }
  const app = await buildTestApp(ENV, { counterStore: new MemoryCounterStore(maxKeys), logDestination })
  try {
    await test(app, lines)
  } finally {
    await app.close()
  }
}

/** Strangers' wrong guesses at alice from three addresses: her account is blocked for every unfamiliar place. */
const blockAlice = async (app: FastifyInstance) => {
  const guesses = await Promise.all(['192.0.2.1', '192.0.2.2', '192.0.2.3'].map((address) => login(app, address, 'alice@acme.example', 'wrong')))
  expect(guesses.map((response) => response.statusCode)).toEqual([401, 401, 401])
}

describe('the in-memory counters, full', () => {
  it("keep a blocked account's counter through 20 concurrent failures of fresh (address, e-mail) pairs, and count and log the evictions", async () => {
    await withApp(30, async (app, lines) => {
      await blockAlice(app)
      problemOf(await login(app, '192.0.2.4', 'alice@acme.example', DEMO_PASSWORD), 429, 'throttled')
      const noise = await Promise.all(
        Array.from({ length: 20 }, (_, index) => login(app, `198.51.${index}.1`, `nobody-${index}@nowhere.example`, 'guess')),
      )
      expect(noise.map((response) => response.statusCode)).toEqual(Array(20).fill(401))
      expect(await evictions(app, 'counter')).toBeGreaterThan(0)
      expect(await evictions(app, 'blocked')).toBe(0)
      problemOf(await login(app, '192.0.2.5', 'alice@acme.example', DEMO_PASSWORD), 429, 'throttled')
      const logged = lines.map((line) => JSON.parse(line) as { msg?: string; evicted?: Record<string, number> }).filter((entry) => entry.evicted)
      expect(logged.length).toBe(1)
      expect(logged[0]!.evicted!.counter).toBeGreaterThan(0)
    })
  })

  it("keep the owner's familiar address through 20 logins from new places", async () => {
    await withApp(10, async (app) => {
      expect((await login(app, '203.0.113.10', 'alice@acme.example', DEMO_PASSWORD)).statusCode).toBe(200)
      // One after another: bob's account admits 3 attempts in flight (LOGIN_FAILURES_PER_ACCOUNT here).
      const elsewhere = []
      for (let index = 0; index < 20; index++) elsewhere.push(await login(app, `198.51.${index}.1`, 'bob@beta.example', DEMO_PASSWORD))
      expect(elsewhere.map((response) => response.statusCode)).toEqual(Array(20).fill(200))
      expect(await evictions(app, 'familiar')).toBeGreaterThan(0)
      await blockAlice(app)
      expect((await login(app, '203.0.113.10', 'alice@acme.example', DEMO_PASSWORD)).statusCode).toBe(200)
    })
  })
})

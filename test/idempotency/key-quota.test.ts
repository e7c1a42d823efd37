import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { RedisCounterStore } from '../../src/auth/throttle/redis-counter-store.js'
import { buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, perTestTokens, problemOf, useTestApp } from '../helpers/app.js'
import { resetDatabase, testDatabase } from '../helpers/database.js'
import { cnpj, customerUrl, isReplay, keptKeys, newKey, post, solicitationUrl } from './helpers.js'

/** Three new keys per caller per hour (issue 33 item 9): the fourth is 429, a replay is never counted. */
const QUOTA = { IDEMPOTENCY_KEYS_PER_CALLER: '3', IDEMPOTENCY_KEY_WINDOW: '1h' }
const context = useTestApp(QUOTA)
const tokenOf = perTestTokens(context)

const customer = (n: number) => ({ name: `Quota ${n}`, tax_id: cnpj(11_444_777_0000 + n) })
const save = async (app: FastifyInstance, token: string, n: number, key: string | undefined, id: string = randomUUID()) =>
  post(app, customerUrl(id), token, customer(n), key)

async function customers(): Promise<number> {
  const { db } = await testDatabase()
  return (await db.selectFrom('customers').select('id').where('company_role_id', '=', DEMO.roles.acmeSeller).execute()).length
}

function expectQuotaRefusal(response: Awaited<ReturnType<typeof save>>): void {
  const body = problemOf(response, 429, 'throttled')
  expect(body.detail).toMatch(/Idempotency-Key/)
  const retryAfter = Number(response.headers['retry-after'])
  expect(retryAfter).toBeGreaterThan(3000)
  expect(retryAfter).toBeLessThanOrEqual(3600)
}

describe('a quota of new Idempotency-Keys per caller (issue 33 item 9)', () => {
  it('answers 429 throttled with Retry-After past the quota, runs nothing and keeps nothing; replays and requests without a key still go', async () => {
    const alice = await tokenOf('alice@acme.example')
    const firstKey = newKey()
    const firstId = randomUUID()
    expect((await save(context.app, alice, 1, firstKey, firstId)).statusCode).toBe(201)
    for (const n of [2, 3]) expect((await save(context.app, alice, n, newKey())).statusCode).toBe(201)
    const before = await customers()

    expectQuotaRefusal(await save(context.app, alice, 4, newKey()))
    expect(await customers()).toBe(before)
    expect(await keptKeys()).toHaveLength(3)

    const replay = await save(context.app, alice, 1, firstKey, firstId)
    expect([replay.statusCode, isReplay(replay)]).toEqual([201, true])
    expect((await save(context.app, alice, 5, undefined)).statusCode).toBe(201)
    // Another caller has a quota of its own.
    expect((await post(context.app, solicitationUrl(), await tokenOf('bob@beta.example'), {}, newKey())).statusCode).toBe(201)
  })

  it('counts only keys kept: a request refused before its work (422 for a reused key) takes no place', async () => {
    const alice = await tokenOf('alice@acme.example')
    const key = newKey()
    expect((await save(context.app, alice, 1, key)).statusCode).toBe(201)
    for (let attempt = 0; attempt < 5; attempt++) problemOf(await save(context.app, alice, 9, key), 422, 'idempotency_key_reused')
    for (const n of [2, 3]) expect((await save(context.app, alice, n, newKey())).statusCode).toBe(201)
    expectQuotaRefusal(await save(context.app, alice, 4, newKey()))
  })
})

describe('the quota across two instances sharing Redis', () => {
  const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 })
  const prefix = `test-h33-keys:${process.pid}:${Date.now()}:`
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`).catch(() => [])
    if (keys.length) await redis.del(...keys)
    await redis.quit().catch(() => undefined)
  })

  it('holds for the fleet: 3 keys through either instance, the fourth refused on both', async () => {
    await redis.connect()
    await resetDatabase()
    const first = await buildTestApp(QUOTA, { counterStore: new RedisCounterStore(redis, prefix) })
    const second = await buildTestApp(QUOTA, { counterStore: new RedisCounterStore(redis, prefix) })
    try {
      const alice = (await obtainTokens(first, 'alice@acme.example', DEMO_PASSWORD)).access
      const answers = await Promise.all([first, second, first, second, first, second].map((app, n) => save(app, alice, n, newKey())))
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([201, 201, 201, 429, 429, 429])
      expectQuotaRefusal(await save(second, alice, 7, newKey()))
      expectQuotaRefusal(await save(first, alice, 8, newKey()))
    } finally {
      await Promise.all([first.close(), second.close()])
    }
  })
})

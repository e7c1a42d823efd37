import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import { afterAll, describe, expect, it } from 'vitest'
import { RedisCounterStore } from '../../src/auth/throttle/redis-counter-store.js'
import type { LogDestination } from '../../src/logging.js'
import { buildTestApp, problemOf, useTestApp } from '../helpers/app.js'
import { WEBHOOK_SECRET, notification } from './helpers.js'

/**
 * Wrong webhook path secrets are counted and limited per client address like failed logins (issue
 * 26, item 3): 404 under the limit, 429 with Retry-After beyond it, for anything from that address.
 */
const LIMITS = { LOGIN_FAILURES_PER_ADDRESS: '30', LOGIN_FAILURE_WINDOW: '60' }
const lines: string[] = []
const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }
const context = useTestApp({ ...LIMITS, LOG_LEVEL: 'warn' }, { logDestination })

const body = JSON.stringify(notification('sign', '2026-05-01T10:00:00.000Z', { signer: 'bob@beta.example' }))

const post = (secret: string, remoteAddress = '198.51.100.20', app: FastifyInstance = context.app) =>
  app.inject({ method: 'POST', url: `/webhook/esign/${secret}/`, headers: { 'content-type': 'application/json' }, payload: body, remoteAddress })

const wrongGuesses = (count: number, remoteAddress?: string, app?: FastifyInstance) =>
  Promise.all(Array.from({ length: count }, (_, index) => post(`guess-${index}-x`, remoteAddress, app)))

const statusCounts = (responses: { statusCode: number }[]) =>
  responses.reduce<Record<number, number>>((counts, { statusCode }) => ({ ...counts, [statusCode]: (counts[statusCode] ?? 0) + 1 }), {})

const rejections = () =>
  lines
    .map((line) => JSON.parse(line) as { event?: string; reason?: string })
    .filter((entry) => entry.event === 'webhook_rejected')
    .map((entry) => entry.reason)

describe('wrong webhook path secrets, limited per address', () => {
  it('answers 40 concurrent wrong guesses from one address: 30 times 404, then 429 with a truthful Retry-After', async () => {
    lines.length = 0
    const responses = await wrongGuesses(40)
    expect(statusCounts(responses)).toEqual({ 404: 30, 429: 10 })
    for (const response of responses.filter(({ statusCode }) => statusCode === 429)) {
      problemOf(response, 429, 'throttled')
      const retryAfter = Number(response.headers['retry-after'])
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(60)
    }
    // Each refusal is audited, with its reason.
    expect(rejections().sort()).toEqual([...Array(30).fill('secret'), ...Array(10).fill('throttled')].sort())
    // From that address even the right secret is 429 now: it would otherwise tell itself apart.
    problemOf(await post(WEBHOOK_SECRET), 429, 'throttled')
    // Another address is not affected, wrong or right.
    expect((await post('another-guess', '198.51.100.21')).statusCode).toBe(404)
    expect((await post(WEBHOOK_SECRET, '198.51.100.21')).statusCode).toBe(201)
  })

  it('counts only wrong secrets: 40 concurrent right deliveries from one address all pass, and leave no count', async () => {
    const responses = await Promise.all(Array.from({ length: 40 }, () => post(WEBHOOK_SECRET)))
    expect(responses.every(({ statusCode }) => statusCode === 201)).toBe(true)
    expect(statusCounts(await wrongGuesses(30))).toEqual({ 404: 30 })
    problemOf(await post('one-more'), 429, 'throttled')
  })

  it('lets the address in again once the window has passed', async () => {
    const app = await buildTestApp({ LOGIN_FAILURES_PER_ADDRESS: '2', LOGIN_FAILURE_WINDOW: '1' })
    try {
      expect(statusCounts(await wrongGuesses(3, undefined, app))).toEqual({ 404: 2, 429: 1 })
      problemOf(await post(WEBHOOK_SECRET, undefined, app), 429, 'throttled')
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      expect((await post(WEBHOOK_SECRET, undefined, app)).statusCode).toBe(201)
    } finally {
      await app.close()
    }
  })
})

describe('with REDIS_URL, wrong secrets counted across instances', () => {
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  afterAll(async () => {
    await redis.quit().catch(() => undefined)
  })

  it('stops 40 concurrent wrong guesses spread over two instances at the one limit', async () => {
    await redis.connect()
    const prefix = `test-webhook-guesses:${process.pid}:${Date.now()}:`
    const first = await buildTestApp(LIMITS, { counterStore: new RedisCounterStore(redis, prefix) })
    const second = await buildTestApp(LIMITS, { counterStore: new RedisCounterStore(redis, prefix) })
    try {
      const responses = await Promise.all([wrongGuesses(20, undefined, first), wrongGuesses(20, undefined, second)])
      expect(statusCounts(responses.flat())).toEqual({ 404: 30, 429: 10 })
      problemOf(await post(WEBHOOK_SECRET, undefined, first), 429, 'throttled')
      problemOf(await post(WEBHOOK_SECRET, undefined, second), 429, 'throttled')
      expect((await post(WEBHOOK_SECRET, '198.51.100.21', second)).statusCode).toBe(201)
    } finally {
      await Promise.all([first.close(), second.close()])
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length) await redis.del(...keys)
    }
  })
})

describe('a wrong Content-Hmac, with ESIGN_WEBHOOK_HMAC_KEY set', () => {
  it('is audited as a signature rejection of the esign provider, naming the client address', async () => {
    const hmacLines: string[] = []
    const app = await buildTestApp(
      { ESIGN_WEBHOOK_HMAC_KEY: 'a-test-hmac-key-of-at-least-32-characters', LOG_LEVEL: 'warn' },
      { logDestination: { write: (line: string) => void hmacLines.push(line) } },
    )
    try {
      const answer = await app.inject({
        method: 'POST',
        url: `/webhook/esign/${WEBHOOK_SECRET}/`,
        headers: { 'content-type': 'application/json', 'content-hmac': `sha256=${'0'.repeat(64)}` },
        payload: body,
        remoteAddress: '198.51.100.30',
      })
      problemOf(answer, 401, 'invalid_signature')
      const audited = hmacLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.event === 'webhook_rejected')
      expect(audited).toEqual([expect.objectContaining({ provider: 'esign', reason: 'signature', client_address: '198.51.100.30' })])
    } finally {
      await app.close()
    }
  })
})

import { Redis } from 'ioredis'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, describe, expect, it } from 'vitest'
import { placeOf } from '../../src/lib/client-address.js'
import { RedisCounterStore } from '../../src/auth/throttle/redis-counter-store.js'
import { buildTestApp, DEMO_PASSWORD, problemOf, useTestApp } from '../helpers/app.js'
import { resetDatabase } from '../helpers/database.js'

// Issue 33 item 1: guesses from strangers must not lock the owner out. The gateway (trusted)
// names each client in X-Forwarded-For; the defaults: 5 failures per (address, e-mail), 20 per
// account, 30 per address, a 15-minute window.
const GATEWAY = { TRUST_PROXY: '127.0.0.1', LOGIN_BURST_WAIT: '8s' }
const OWNER = 'alice@acme.example'
const HOME = '203.0.113.10'
const ATTACKERS = Array.from({ length: 40 }, (_, index) => `198.51.100.${index + 1}`)

const login = (app: FastifyInstance, clientAddress: string, password: string, route: 'token' | 'login' = 'token', email = OWNER) =>
  app.inject({
    method: 'POST',
    url: `/api/auth/v1/${route}`,
    headers: { 'x-forwarded-for': clientAddress },
    payload: { email, password },
  })

interface Siege {
  owner: LightMyRequestResponse[]
  attackers: LightMyRequestResponse[]
}

/**
 * `rounds` bursts: in each, every attacker address guesses once while the owner logs in
 * `ownerPerRound` times from `ownerAddress`, all at once (routes 1 and 2 alternating); round r on
 * apps[r % apps.length].
 */
async function siege(apps: FastifyInstance[], rounds: number, ownerAddress = HOME, ownerPerRound = 4): Promise<Siege> {
  const result: Siege = { owner: [], attackers: [] }
  for (let round = 0; round < rounds; round++) {
    const app = apps[round % apps.length]!
    const guesses = ATTACKERS.map((address, index) => ({
      owner: false,
      response: login(app, address, `guess ${round}-${index}`, index % 2 === 0 ? 'token' : 'login'),
    }))
    // The owner's attempts spread among the guesses, not all before or after them.
    for (let index = 0; index < ownerPerRound; index++) {
      const at = Math.round(((index + 0.5) * guesses.length) / ownerPerRound)
      guesses.splice(at + index, 0, { owner: true, response: login(app, ownerAddress, DEMO_PASSWORD, index % 2 === 0 ? 'login' : 'token') })
    }
    const responses = await Promise.all(guesses.map(({ response }) => response))
    guesses.forEach(({ owner }, index) => (owner ? result.owner : result.attackers).push(responses[index]!))
  }
  return result
}

const successRate = (responses: LightMyRequestResponse[]) => responses.filter((response) => response.statusCode === 200).length / responses.length

/** Guesses from unfamiliar addresses reach the password check (401) at most the per-account limit's worth; the rest are 429. */
function expectGuessesLimited(attackers: LightMyRequestResponse[], perAccount = 20): number {
  const checked = attackers.filter((response) => response.statusCode === 401).length
  const refused = attackers.filter((response) => response.statusCode === 429)
  expect(checked + refused.length).toBe(attackers.length)
  expect(checked).toBeGreaterThan(0)
  expect(checked).toBeLessThanOrEqual(perAccount)
  for (const response of refused) {
    problemOf(response, 429, 'throttled')
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0)
  }
  return checked
}

describe('guesses from 40 unfamiliar addresses against an account (in memory)', () => {
  const ctx = useTestApp(GATEWAY)

  it('lets the owner in from an address they logged in from, ≥ 95 % of the time, while the guesses stay limited per account', async () => {
    expect((await login(ctx.app, HOME, DEMO_PASSWORD)).statusCode).toBe(200)
    const { owner, attackers } = await siege([ctx.app], 6)
    const rate = successRate(owner)
    const checked = expectGuessesLimited(attackers)
    console.log(`in memory: owner ${(rate * 100).toFixed(1)} % of ${owner.length} logins; ${checked} of ${attackers.length} guesses checked`)
    expect(rate).toBeGreaterThanOrEqual(0.95)
    // From an address the account never logged in from, the owner is limited with the strangers.
    problemOf(await login(ctx.app, '192.0.2.200', DEMO_PASSWORD), 429, 'throttled')
  })

  it('counts a familiar place as its /24 (IPv4) or /64 (IPv6)', async () => {
    expect((await login(ctx.app, '203.0.113.10', DEMO_PASSWORD)).statusCode).toBe(200)
    expect((await login(ctx.app, '2001:db8:1:2:aaaa::1', DEMO_PASSWORD)).statusCode).toBe(200)
    await siege([ctx.app], 1)
    expect((await login(ctx.app, '203.0.113.77', DEMO_PASSWORD, 'login')).statusCode).toBe(200)
    expect((await login(ctx.app, '2001:db8:1:2:bbbb::9', DEMO_PASSWORD)).statusCode).toBe(200)
    problemOf(await login(ctx.app, '203.0.114.10', DEMO_PASSWORD), 429, 'throttled')
    problemOf(await login(ctx.app, '2001:db8:1:3::1', DEMO_PASSWORD), 429, 'throttled')
  })

  it('still limits a familiar address that guesses: 5 per (address, e-mail), and the per-account limit per familiar place', async () => {
    expect((await login(ctx.app, HOME, DEMO_PASSWORD)).statusCode).toBe(200)
    const fromHome = await Promise.all(Array.from({ length: 10 }, (_, index) => login(ctx.app, HOME, `guess ${index}`)))
    expect(fromHome.filter((response) => response.statusCode === 401).length).toBe(5)
    problemOf(await login(ctx.app, HOME, DEMO_PASSWORD), 429, 'throttled')
    // Its /24 neighbours share the place's budget, apart from the address's own: 20 failures, then 429 for the place.
    const neighbours = await Promise.all(Array.from({ length: 30 }, (_, index) => login(ctx.app, `203.0.113.${100 + index}`, `guess ${index}`)))
    expect(neighbours.filter((response) => response.statusCode === 401).length).toBe(20)
    problemOf(await login(ctx.app, '203.0.113.200', DEMO_PASSWORD), 429, 'throttled')
    // Strangers' budget is apart: the owner still logs in from a new address.
    expect((await login(ctx.app, '192.0.2.201', DEMO_PASSWORD)).statusCode).toBe(200)
  })
})

describe('a familiar address forgotten after LOGIN_FAMILIAR_TTL', () => {
  it('is limited with the strangers once its last login is older than the TTL', async () => {
    await resetDatabase()
    const app = await buildTestApp({ ...GATEWAY, LOGIN_FAMILIAR_TTL: '1s' })
    try {
      expect((await login(app, HOME, DEMO_PASSWORD)).statusCode).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      await siege([app], 1, HOME, 0)
      problemOf(await login(app, HOME, DEMO_PASSWORD), 429, 'throttled')
    } finally {
      await app.close()
    }
  })
})

describe('familiar places while Redis is down', () => {
  it("are this instance's: the owner still gets in from a place they logged in from here", async () => {
    await resetDatabase()
    const app = await buildTestApp({ ...GATEWAY, REDIS_URL: 'redis://127.0.0.1:1' }, { counterStore: undefined })
    try {
      expect((await login(app, HOME, DEMO_PASSWORD)).statusCode).toBe(200)
      const { owner, attackers } = await siege([app], 2, HOME, 2)
      expect(owner.map((response) => `${response.statusCode} ${response.statusCode === 200 ? '' : response.body}`)).toEqual(Array(4).fill('200 '))
      expectGuessesLimited(attackers)
    } finally {
      await app.close()
    }
  })
})

describe('guesses from 40 unfamiliar addresses, two instances sharing Redis', () => {
  const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 })
  const prefix = `test-h33-familiar:${process.pid}:${Date.now()}:`
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`).catch(() => [])
    if (keys.length) await redis.del(...keys)
    await redis.quit().catch(() => undefined)
  })

  it('lets the owner in from a familiar address on either instance, ≥ 95 %, the guesses limited across both, no raw address kept beyond the window', async () => {
    await redis.connect()
    await resetDatabase()
    const first = await buildTestApp(GATEWAY, { counterStore: new RedisCounterStore(redis, prefix) })
    const second = await buildTestApp(GATEWAY, { counterStore: new RedisCounterStore(redis, prefix) })
    try {
      // Familiar through the first instance, then besieged through both.
      expect((await login(first, HOME, DEMO_PASSWORD)).statusCode).toBe(200)
      const { owner, attackers } = await siege([second, first], 6)
      const rate = successRate(owner)
      const checked = expectGuessesLimited(attackers)
      console.log(
        `two instances on Redis: owner ${(rate * 100).toFixed(1)} % of ${owner.length} logins; ${checked} of ${attackers.length} guesses checked`,
      )
      expect(rate).toBeGreaterThanOrEqual(0.95)
      problemOf(await login(second, '192.0.2.200', DEMO_PASSWORD), 429, 'throttled')

      // What outlives the failure window names neither the address nor the e-mail.
      const keys = await redis.keys(`${prefix}*`)
      const lasting = []
      for (const key of keys) if ((await redis.pttl(key)) > 15 * 60 * 1000) lasting.push(key)
      expect(lasting.length).toBeGreaterThan(0)
      for (const key of lasting) {
        expect(key).not.toContain('203.0.113')
        expect(key).not.toContain(OWNER)
        expect(await redis.get(key)).not.toContain('203.0.113')
      }
    } finally {
      await Promise.all([first.close(), second.close()])
    }
  })
})

// Issue 42 item 3: strangers in the owner's /24, named by X-Forwarded-For with TRUST_PROXY=true,
// must not spend the budget of the owner's own address.
const NEIGHBOURS = Array.from({ length: 40 }, (_, index) => `203.0.113.${100 + index}`)

/** 3 rounds: the 40 neighbours each guess once while the owner logs in 4 times from HOME, all at once. */
async function neighboursSiege(apps: FastifyInstance[]): Promise<Siege> {
  const result: Siege = { owner: [], attackers: [] }
  for (let round = 0; round < 3; round++) {
    const app = apps[round % apps.length]!
    const guesses = NEIGHBOURS.map((address, index) => login(app, address, `neighbour ${round}-${index}`))
    const owner = Array.from({ length: 4 }, (_, index) => login(app, HOME, DEMO_PASSWORD, index % 2 === 0 ? 'token' : 'login'))
    const [attackers, owners] = await Promise.all([Promise.all(guesses), Promise.all(owner)])
    result.attackers.push(...attackers)
    result.owner.push(...owners)
  }
  return result
}

describe("strangers in the owner's /24 (TRUST_PROXY=true)", () => {
  const TRUSTING = { TRUST_PROXY: 'true', LOGIN_BURST_WAIT: '8s' }
  const ctx = useTestApp(TRUSTING)

  it("leave the owner's exact address its own budget, in memory", async () => {
    expect((await login(ctx.app, HOME, DEMO_PASSWORD)).statusCode).toBe(200)
    const { owner, attackers } = await neighboursSiege([ctx.app])
    expect(owner.map((response) => response.statusCode)).toEqual(Array(12).fill(200))
    expectGuessesLimited(attackers)
    // The place's budget is spent: another address of the /24 is limited with the neighbours.
    problemOf(await login(ctx.app, '203.0.113.250', DEMO_PASSWORD), 429, 'throttled')
  })

  it("leave the owner's exact address its own budget, two instances on Redis", async () => {
    const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 })
    const prefix = `test-h42-neighbours:${process.pid}:${Date.now()}:`
    const first = await buildTestApp(TRUSTING, { counterStore: new RedisCounterStore(redis, prefix) })
    const second = await buildTestApp(TRUSTING, { counterStore: new RedisCounterStore(redis, prefix) })
    try {
      expect((await login(first, HOME, DEMO_PASSWORD)).statusCode).toBe(200)
      const { owner, attackers } = await neighboursSiege([second, first])
      expect(owner.map((response) => response.statusCode)).toEqual(Array(12).fill(200))
      expectGuessesLimited(attackers)
    } finally {
      await Promise.all([first.close(), second.close()])
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length) await redis.del(...keys)
      await redis.quit()
    }
  })
})

describe('the place of a client address: its /24 or /64', () => {
  it.each([
    ['203.0.113.77', '203.0.113.0/24'],
    ['::ffff:203.0.113.77', '203.0.113.0/24'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002::', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['1:2:3::4:5:6:7', '1:2:3:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['not an address', 'not an address'],
  ])('%s is %s', (address, place) => {
    expect(placeOf(address)).toBe(place)
  })
})

import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf } from '../helpers/app.js'
import { forgeHs256 } from '../helpers/jwt.js'
import { resetDatabase } from '../helpers/database.js'

const { roles, titles, users } = DEMO
const COMPANIES = '/api/company/v1/get-user-companies'
const documentsUrl = (role: string) => `/api/v1/marketplace/${role}/title/${titles.t1}/documents`

const apps: FastifyInstance[] = []
async function appWith(env: Record<string, string>): Promise<FastifyInstance> {
  await resetDatabase()
  const app = await buildTestApp(env)
  apps.push(app)
  return app
}
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()))
})

const access = async (app: FastifyInstance, email: string) => (await obtainTokens(app, email, DEMO_PASSWORD)).access
const at = (count: number, send: (i: number) => Promise<LightMyRequestResponse>) => Promise.all(Array.from({ length: count }, (_, i) => send(i)))
const statuses = (answers: LightMyRequestResponse[]) => answers.map((answer) => answer.statusCode)
const countOf = (answers: LightMyRequestResponse[], status: number) => statuses(answers).filter((one) => one === status).length

describe('limits per principal (src/fairness/)', () => {
  it("holds a user to the reads quota under 30 concurrent requests: 429 rate_limited with a true Retry-After and the RateLimit fields; another user's quota is untouched", async () => {
    const app = await appWith({ RATE_LIMITS: 'reads=10', RATE_LIMIT_WINDOW: '60s' })
    const [alice, bob] = [await access(app, 'alice@acme.example'), await access(app, 'bob@beta.example')]
    const answers = await at(30, () => app.inject({ method: 'GET', url: COMPANIES, headers: bearer(alice) }))
    expect(countOf(answers, 200)).toBe(10)
    expect(countOf(answers, 429)).toBe(20)
    const refused = answers.find((answer) => answer.statusCode === 429)!
    problemOf(refused, 429, 'rate_limited')
    const retryAfter = Number(refused.headers['retry-after'])
    expect(retryAfter).toBeGreaterThanOrEqual(55)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(refused.headers['ratelimit-policy']).toBe('"reads";q=10;w=60')
    expect(refused.headers['ratelimit']).toMatch(/^"reads";r=0;t=(5[5-9]|60)$/)
    const admitted = answers.filter((answer) => answer.statusCode === 200).map((answer) => answer.headers['ratelimit'])
    expect(new Set(admitted).size).toBe(10) // r=9 … r=0, each counted once
    const other = await app.inject({ method: 'GET', url: COMPANIES, headers: bearer(bob) })
    expect(other.statusCode).toBe(200)
    expect(other.headers['ratelimit']).toMatch(/^"reads";r=9;t=/)
  })

  it('holds back the refusal of a caller that sends again before its Retry-After is over, not of requests sent together', async () => {
    const app = await appWith({ RATE_LIMITS: 'reads=2', RATE_LIMIT_WINDOW: '60s' })
    const alice = await access(app, 'alice@acme.example')
    const held = async () => Number(/^http_requests_limited_held_total (\d+)$/m.exec(await app.metrics.registry.metrics())![1])
    const together = await at(25, () => app.inject({ method: 'GET', url: COMPANIES, headers: bearer(alice) }))
    expect(countOf(together, 429)).toBe(23)
    expect(await held()).toBe(0)
    // Sent again after being told to wait: held back, then refused with what is left of the wait.
    const again = await at(20, () => app.inject({ method: 'GET', url: COMPANIES, headers: bearer(alice) }))
    expect(statuses(again)).toEqual(Array(20).fill(429))
    expect(await held()).toBe(20)
    problemOf(again[0]!, 429, 'rate_limited')
    expect(Number(again[0]!.headers['retry-after'])).toBeLessThanOrEqual(59)
    // Another caller's first refusal is its own: answered at once.
    const bob = await access(app, 'bob@beta.example')
    await at(3, () => app.inject({ method: 'GET', url: COMPANIES, headers: bearer(bob) }))
    expect(await held()).toBe(20)
  })

  it('counts writes apart from reads', async () => {
    const app = await appWith({ RATE_LIMITS: 'reads=5,writes=3', RATE_LIMIT_WINDOW: '60s' })
    const alice = await access(app, 'alice@acme.example')
    const url = `/api/company/v1/${roles.acmeSeller}/bank-account/${DEMO.bankAccounts.acme3}`
    const writes = await at(20, () => app.inject({ method: 'DELETE', url, headers: bearer(alice) }))
    expect(countOf(writes, 429)).toBe(17)
    expect(writes.find((answer) => answer.statusCode === 429)!.headers['ratelimit-policy']).toBe('"writes";q=3;w=60')
    const reads = await at(8, () => app.inject({ method: 'GET', url: COMPANIES, headers: bearer(alice) }))
    expect(countOf(reads, 200)).toBe(5)
  })

  it('holds a company role to its own quota across its members, once admitted; another partner naming the role in its URLs does not spend it', async () => {
    const app = await appWith({ RATE_LIMITS: 'reads=10', RATE_LIMIT_WINDOW: '60s' })
    const [alice, erin, bob] = (await Promise.all(
      ['alice@acme.example', 'erin@acme.example', 'bob@beta.example'].map((email) => access(app, email)),
    )) as [string, string, string]
    // Bob is not a member: his refusals spend his own quota only.
    const foreign = await at(12, () => app.inject({ method: 'GET', url: documentsUrl(roles.acmeSeller), headers: bearer(bob) }))
    expect(countOf(foreign, 429)).toBe(2)
    expect(countOf(foreign, 200)).toBe(0)
    for (const token of [alice, erin])
      expect((await app.inject({ method: 'GET', url: documentsUrl(roles.acmeSeller), headers: bearer(token) })).statusCode).toBe(200)
    const answers = await at(20, (i) => app.inject({ method: 'GET', url: documentsUrl(roles.acmeSeller), headers: bearer(i % 2 ? alice : erin) }))
    // Each user has 9 reads left, the role 10 (the first admissions taught it its members).
    expect(countOf(answers, 200)).toBe(10)
    expect(answers.find((answer) => answer.statusCode === 200)!.headers['ratelimit-policy']).toBe('"reads";q=10;w=60, "reads-company-role";q=10;w=60')
  })

  it('holds a user to its requests at once (CONCURRENCY_LIMITS) under 30 concurrent requests, and gives the places back', async () => {
    const app = await appWith({ CONCURRENCY_LIMITS: 'reads=3' })
    const alice = await access(app, 'alice@acme.example')
    const answers = await at(30, () => app.inject({ method: 'GET', url: documentsUrl(roles.acmeSeller), headers: bearer(alice) }))
    expect(countOf(answers, 200)).toBeGreaterThanOrEqual(3)
    expect(countOf(answers, 429)).toBeGreaterThan(0)
    expect(countOf(answers, 200) + countOf(answers, 429)).toBe(30)
    const refused = answers.find((answer) => answer.statusCode === 429)!
    expect(problemOf(refused, 429, 'rate_limited').detail).toMatch(/at once/)
    expect(refused.headers['retry-after']).toBe('1')
    // Every place given back: three at once pass.
    expect(statuses(await at(3, () => app.inject({ method: 'GET', url: documentsUrl(roles.acmeSeller), headers: bearer(alice) })))).toEqual([
      200, 200, 200,
    ])
  })
})

describe('limits by address', () => {
  it('refuses an address that sent too many 401s (no token, forged, a disabled user) before verifying its next token', async () => {
    const app = await appWith({ RATE_LIMITS: 'rejected=10', RATE_LIMIT_WINDOW: '60s' })
    const alice = await access(app, 'alice@acme.example')
    const forged = forgeHs256({ token_type: 'access', user_id: users.alice, exp: 9e9, iat: 1, jti: 'x', fid: 'y' }, 'not-the-key')
    const answers = await at(30, (i) => app.inject({ method: 'GET', url: COMPANIES, headers: i % 2 ? bearer(forged) : {} }))
    expect(countOf(answers, 401)).toBe(30) // counted after their answers
    const next = await app.inject({ method: 'GET', url: COMPANIES, headers: bearer(forged) })
    problemOf(next, 429, 'rate_limited')
    expect(Number(next.headers['retry-after'])).toBeGreaterThan(50)
    // The address, whatever it sends now; another address is served.
    expect((await app.inject({ method: 'GET', url: COMPANIES, headers: bearer(alice) })).statusCode).toBe(429)
    expect((await app.inject({ method: 'GET', url: COMPANIES, headers: bearer(alice), remoteAddress: '203.0.113.9' })).statusCode).toBe(200)
  })

  it('holds an address to the authentication quota (refresh here) under 30 concurrent requests', async () => {
    const app = await appWith({ RATE_LIMITS: 'authentication=10', RATE_LIMIT_WINDOW: '60s' })
    const answers = await at(30, () => app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: 'not.a.token' } }))
    expect(countOf(answers, 401)).toBe(10)
    expect(countOf(answers, 429)).toBe(20)
    expect(answers.find((answer) => answer.statusCode === 429)!.headers['ratelimit-policy']).toBe('"authentication";q=10;w=60')
  })
})

describe('the fleet through Redis', () => {
  it('shares a quota between two instances on one Redis: 30 concurrent requests over both, 10 admitted', async () => {
    const env = { RATE_LIMITS: 'reads=10', RATE_LIMIT_WINDOW: '60s', REDIS_URL: 'redis://127.0.0.1:6379' }
    const [one, two] = [await appWith(env), await appWith(env)]
    const [carol, bob] = [await access(one, 'carol@gamma.example'), await access(one, 'bob@beta.example')]
    // Each instance's Redis connection up first (and its script loaded): a slow first command would fall back to local counts.
    for (const app of [one, two]) expect((await app.inject({ method: 'GET', url: COMPANIES, headers: bearer(bob) })).statusCode).toBe(200)
    const answers = await at(30, (i) => (i % 2 ? one : two).inject({ method: 'GET', url: COMPANIES, headers: bearer(carol) }))
    expect(countOf(answers, 200)).toBe(10)
    expect(countOf(answers, 429)).toBe(20)
  })

  it('falls back to the instance’s own counts when Redis is unreachable: the limit holds, never a 5xx', async () => {
    const app = await appWith({ RATE_LIMITS: 'reads=10', RATE_LIMIT_WINDOW: '60s', REDIS_URL: 'redis://127.0.0.1:1' })
    const dave = await access(app, 'dave@delta.example')
    const answers = await at(30, () => app.inject({ method: 'GET', url: COMPANIES, headers: bearer(dave) }))
    expect(countOf(answers, 200)).toBe(10)
    expect(countOf(answers, 429)).toBe(20)
  })
})

describe('load shedding by priority', () => {
  it('sheds large reads first, then reads, never refresh or health while reads are shed; readiness says it sheds', async () => {
    const app = await appWith({ LOAD_SHED: 'in_flight=8' })
    const [alice, tokens] = [await access(app, 'alice@acme.example'), await obtainTokens(app, 'erin@acme.example', DEMO_PASSWORD)]
    const large = at(20, () => app.inject({ method: 'GET', url: documentsUrl(roles.acmeSeller), headers: bearer(alice) }))
    const reads = at(20, () => app.inject({ method: 'GET', url: COMPANIES, headers: bearer(alice) }))
    const refresh = app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: tokens.refresh } })
    const live = app.inject({ method: 'GET', url: '/health/live' })
    const [largeAnswers, readAnswers] = [await large, await reads]
    expect((await refresh).statusCode).toBe(200)
    expect((await live).statusCode).toBe(200)
    // Large reads from 4 in flight (half of 8), other reads from 6: the reads sent after them still find 2 places.
    expect(countOf(largeAnswers, 200)).toBe(4)
    expect(countOf(largeAnswers, 503)).toBe(16)
    expect(countOf(readAnswers, 200)).toBe(2)
    const shed = largeAnswers.find((answer) => answer.statusCode === 503)!
    problemOf(shed, 503, 'service_unavailable')
    expect(shed.headers['retry-after']).toBe('1')
    const ready = await app.inject({ method: 'GET', url: '/health/ready' })
    expect(problemOf(ready, 503, 'service_unavailable').detail).toMatch(/sheds/)
  })

  it("refuses a caller beyond its own limits (429) before shedding (503): its excess is not the instance's load", async () => {
    const app = await appWith({ LOAD_SHED: 'in_flight=8', RATE_LIMITS: 'reads=4', RATE_LIMIT_WINDOW: '60s' })
    const alice = await access(app, 'alice@acme.example')
    const answers = await at(30, () => app.inject({ method: 'GET', url: documentsUrl(roles.acmeSeller), headers: bearer(alice) }))
    // 4 within the quota (all in flight at once: large reads are shed from 4), the other 26 over it.
    expect(countOf(answers, 200)).toBe(4)
    expect(countOf(answers, 429)).toBe(26)
  })
})

import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEMO_PASSWORD } from '../../db/seed/demo.js'
import { DEMO } from '../../db/seed/ids.js'
import { cnpjCheckDigits } from '../../src/lib/tax-id.js'
import { request, startTopology, topologyUnavailable, type Answer, type RequestOptions, type Topology } from './topology.js'

const unavailable = topologyUnavailable()
if (unavailable) process.stderr.write(`${unavailable}\n`)

/** SIGTERMs under load; CI keeps it small, `TOPOLOGY_DRAINS=5` (or more) for the bar. */
const DRAINS = Number(process.env.TOPOLOGY_DRAINS ?? 5)
/**
 * `false`: the gateway is not told (nginx without active health checks keeps sending until connects
 * fail). Requests reaching the listener as it closes can then be reset: see README, "behind a gateway".
 */
const DEREGISTER = process.env.TOPOLOGY_DEREGISTER !== 'false'
const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

const INSTANCE_ENV = {
  LOG_LEVEL: 'warn',
  REDIS_URL: redisUrl,
  // The gateway's address: only its X-Forwarded-For entry is believed (README, "behind a gateway").
  TRUST_PROXY: '127.0.0.1',
  LOGIN_FAILURES_PER_CLIENT: '3',
  LOGIN_FAILURES_PER_ADDRESS: '10000',
  LOGIN_FAILURE_WINDOW: '60',
  ACCESS_TOKEN_TTL: '1h',
  // Above nginx's upstream keepalive_timeout (2 s here): see src/plugins/draining.ts.
  DRAIN_DELAY: '3s',
  SHUTDOWN_TIMEOUT: '15s',
  DATABASE_CONNECT_TIMEOUT: '1s',
  DATABASE_STATEMENT_TIMEOUT: '2s',
}

const { roles } = DEMO
// CNPJs of their own (the demo data holds the usual test numbers): 12 random digits and their check digits.
const CUSTOMERS = Array.from({ length: 4 }, () => {
  const base = Array.from({ length: 12 }, () => Math.floor(Math.random() * 10)).join('')
  return { id: randomUUID(), tax_id: `${base}${cnpjCheckDigits(base)}` }
})

const json = (answer: Answer) => JSON.parse(answer.body) as Record<string, unknown>

/**
 * A partner's retries (docs/retries.md, packages/client): a request that is safe to send
 * again (a GET, a POST with its Idempotency-Key, a refresh within the grace) is sent again after a lost
 * answer or a 502/503/504, after Retry-After (at most 1 s here). `retries` counts them.
 */
async function withRetries(send: () => Promise<Answer>, retries: { count: number }): Promise<Answer | Error> {
  for (let attempt = 1; ; attempt++) {
    const answer = await send().catch((error: Error) => error)
    if (attempt === 5 || !(answer instanceof Error || [502, 503, 504].includes(answer.status))) return answer
    retries.count++
    const wait = answer instanceof Error ? 100 * attempt : Math.min(1, Number(answer.headers['retry-after'] ?? 1)) * 1000
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}

describe.skipIf(unavailable !== undefined)('the fleet: nginx, two instances, PgBouncer, PostgreSQL, Redis', () => {
  let topology: Topology
  let gateway: number
  /** Through the gateway, over TLS, trusting the test authority that signed its certificate. */
  const viaGateway = (options: RequestOptions) => request(gateway, { ...options, ca: topology.gateway.ca })

  const login = async (email: string): Promise<{ access: string; refresh: string }> => {
    const answer = await viaGateway({ method: 'POST', path: '/api/auth/v1/token', body: { email, password: DEMO_PASSWORD }, from: '127.0.0.9' })
    if (answer.status !== 200) throw new Error(`login ${email}: ${answer.status} ${answer.body}\n${instanceLogs()}`)
    return json(answer) as { access: string; refresh: string }
  }

  /** The instances' warnings and errors, for a failure's message. */
  const instanceLogs = () => topology.instances.flatMap((instance, index) => instance.output.map((line) => `instance ${index}: ${line}`)).join('\n')

  beforeAll(async () => {
    topology = await startTopology(INSTANCE_ENV, DEREGISTER)
    gateway = topology.gateway.port
  })

  afterAll(async () => {
    await topology?.stop()
  })

  it('serves through the gateway on PgBouncer, the settings given by ALTER ROLE (no configuration error)', async () => {
    const ready = await viaGateway({ path: '/health/ready' })
    expect(ready.status).toBe(200)
    expect(json(ready)).toEqual({ status: 'ok' })
    expect(ready.headers['strict-transport-security']).toBe('max-age=31536000')
    // Plain HTTP answers only a redirect to the same path over HTTPS, and never reaches an instance.
    const plain = await request(topology.gateway.httpPort, {
      method: 'POST',
      path: '/api/auth/v1/token?x=1',
      body: { email: 'a@b.c', password: 'p' },
    })
    expect(plain.status).toBe(308)
    expect(plain.headers.location).toBe('https://127.0.0.1/api/auth/v1/token?x=1')
  })

  it(
    `loses no request across ${DRAINS} SIGTERMs under mixed load (reads, refresh chains, route 11 upserts)`,
    async () => {
      const alice = await login('alice@acme.example')
      const chains = await Promise.all(['bob@beta.example', 'carol@gamma.example', 'dave@delta.example'].map(login))
      const failures: string[] = []
      const counts = { read: 0, refresh: 0, upsert: 0 }
      const retries = { count: 0 }
      let running = true
      const record = (kind: keyof typeof counts, answer: Answer | Error, expected: number) => {
        counts[kind]++
        if (answer instanceof Error) failures.push(`${kind}: ${answer.message}`)
        else if (answer.status !== expected) failures.push(`${kind}: ${answer.status} ${answer.body.slice(0, 200)}`)
      }
      const auth = { authorization: `Bearer ${alice.access}` }
      const reader = async () => {
        while (running) {
          // A GET is always safe to send again.
          const answer = await withRetries(() => viaGateway({ path: '/api/company/v1/get-user-companies', headers: auth }), retries)
          record('read', answer, 200)
        }
      }
      const upserter = async (offset: number) => {
        for (let n = offset; running; n++) {
          const customer = CUSTOMERS[n % CUSTOMERS.length]!
          // One key per operation, the same on each of its attempts.
          const headers = { ...auth, 'idempotency-key': randomUUID() }
          const answer = await withRetries(
            () =>
              viaGateway({
                method: 'POST',
                path: `/api/company/v1/${roles.acmeSeller}/customers/${customer.id}`,
                headers,
                body: { name: `Customer ${n % CUSTOMERS.length}`, tax_id: customer.tax_id },
              }),
            retries,
          )
          record('upsert', answer, 201)
        }
      }
      const chain = async (tokens: { refresh: string }) => {
        let refresh = tokens.refresh
        while (running) {
          // The same spent token again within REFRESH_REUSE_GRACE gets the same successor.
          const answer = await withRetries(() => viaGateway({ method: 'POST', path: '/api/auth/v1/token/refresh', body: { refresh } }), retries)
          record('refresh', answer, 200)
          // An answer still lost after the retries ends the chain: its next token is unknown.
          if (answer instanceof Error || answer.status !== 200) return
          refresh = (json(answer) as { refresh: string }).refresh
        }
      }
      const load = [reader(), reader(), upserter(0), upserter(2), ...chains.map(chain)]
      const drains: { exitCode: number | null; notReadyMs: number; tookMs: number }[] = []
      try {
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        for (let drain = 0; drain < DRAINS; drain++) {
          drains.push(await topology.restart(drain % 2))
          await new Promise((resolve) => setTimeout(resolve, 1_000))
        }
      } finally {
        running = false
        await Promise.all(load)
      }
      process.stderr.write(
        `topology: ${DRAINS} drains, ${counts.read} reads, ${counts.refresh} refreshes, ${counts.upsert} upserts, ` +
          `${failures.length} failed, ${retries.count} retried; not ready after ${drains.map((d) => d.notReadyMs).join('/')} ms, exited after ${drains.map((d) => d.tookMs).join('/')} ms\n`,
      )
      expect(failures, instanceLogs()).toEqual([])
      for (const drain of drains) {
        expect(drain.exitCode).toBe(0)
        expect(drain.notReadyMs).toBeGreaterThanOrEqual(0)
        // Not ready well before DRAIN_DELAY (3 s) ends and the listener closes, load or not.
        expect(drain.notReadyMs).toBeLessThan(2_500)
        expect(drain.tookMs).toBeLessThan(15_000)
      }
      expect(Math.min(counts.read, counts.refresh, counts.upsert)).toBeGreaterThan(DRAINS * 5)
    },
    60_000 + DRAINS * 30_000,
  )

  it('answers 503 within seconds while PgBouncer is paused, keeps liveness, and recovers on RESUME', async () => {
    const alice = await login('alice@acme.example')
    const read = () => viaGateway({ path: '/api/company/v1/get-user-companies', headers: { authorization: `Bearer ${alice.access}` } })
    expect((await read()).status).toBe(200)
    await topology.bouncer.admin(`PAUSE ${topology.database}`)
    try {
      let started = Date.now()
      const answer = await read()
      const pausedMs = Date.now() - started
      process.stderr.write(`topology: 503 after ${pausedMs} ms through the gateway with PgBouncer paused\n`)
      expect(answer.status).toBe(503)
      expect(answer.headers['retry-after']).toBe('5')
      expect(json(answer)).toMatchObject({ code: 'service_unavailable', status: 503 })
      // The gateway tried both instances (http_503 is retried for a GET): each gave up within its bounds.
      expect(pausedMs).toBeLessThan(8_000)
      for (const port of topology.ports) {
        started = Date.now()
        expect((await request(port, { path: '/health/ready', from: '127.0.0.1' })).status).toBe(503)
        expect(Date.now() - started).toBeLessThan(1_500)
        expect((await request(port, { path: '/health/live', from: '127.0.0.1' })).status).toBe(200)
      }
    } finally {
      await topology.bouncer.admin(`RESUME ${topology.database}`)
    }
    expect((await read()).status).toBe(200)
    for (const port of topology.ports) expect((await request(port, { path: '/health/ready', from: '127.0.0.1' })).status).toBe(200)
  })

  it('revokes the family when a refresh token spent on one instance is replayed on the other', async () => {
    const [first, second] = topology.ports as [number, number]
    const tokens = await login('erin@acme.example')
    const refresh = (port: number, token: string) =>
      request(port, { method: 'POST', path: '/api/auth/v1/token/refresh', body: { refresh: token }, from: '127.0.0.1' })
    const rotated = await refresh(first, tokens.refresh)
    expect(rotated.status).toBe(200)
    // Its successor used: the first token is past any retry grace.
    const used = await refresh(first, (json(rotated) as { refresh: string }).refresh)
    expect(used.status).toBe(200)
    const replay = await refresh(second, tokens.refresh)
    expect(replay.status).toBe(401)
    expect(json(replay).code).toBe('token_not_valid')
    // The family is gone: the token the first instance just gave is refused everywhere.
    const next = (json(used) as { refresh: string }).refresh
    expect((await refresh(first, next)).status).toBe(401)
    expect((await refresh(second, next)).status).toBe(401)
  })

  it('shares the login limit across instances by the client address from X-Forwarded-For, which the client cannot spoof', async () => {
    const email = `topology-${randomUUID()}@example.test`
    const attempt = (from: string, spoofed: string) =>
      viaGateway({
        method: 'POST',
        path: '/api/auth/v1/token',
        body: { email, password: 'wrong-password' },
        headers: { 'x-forwarded-for': spoofed },
        from,
      })
    // Round robin: the attempts alternate between the two instances; each claims another address.
    const statuses: number[] = []
    for (let n = 0; n < 5; n++) statuses.push((await attempt('127.0.0.2', `203.0.113.${n + 1}`)).status)
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401])
    expect(statuses.slice(3)).toEqual([429, 429])
    const limited = await attempt('127.0.0.2', '198.51.100.7')
    expect(limited.status).toBe(429)
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    // Another client (another address at the gateway) is not limited by the first one's failures.
    expect((await attempt('127.0.0.3', '127.0.0.2')).status).toBe(401)
  })
})

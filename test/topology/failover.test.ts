import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedDemoUnlessPresent } from '../../db/seed/demo.js'
import { DEMO } from '../../db/seed/ids.js'
import { createPostgresDatabase, migrateToLatest } from '../../src/db/database.js'
import { cnpjCheckDigits } from '../../src/lib/tax-id.js'
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js'
import { haUnavailable, startHaCluster, type HaCluster } from './ha.js'
import { demoAccessToken, request, type Answer } from './topology.js'

/**
 * The service on a highly available PostgreSQL (deploy/ha/: Patroni, etcd, HAProxy; three nodes,
 * synchronous replication in strict mode), two instances on HAProxy's read-write address, called
 * directly (so that each answer's time is the instance's own, with no gateway retrying a GET on the
 * other). It makes its own clusters, so it needs no test database; it runs in the PostgreSQL run
 * only (TEST_DATABASE_URL), so that CI pays for it once.
 */
const unavailable = process.env.TEST_DATABASE_URL ? haUnavailable() : 'HA tests skipped: they run with TEST_DATABASE_URL (the PostgreSQL run)'
if (unavailable) process.stderr.write(`${unavailable}\n`)

const HANDLER_TIMEOUT_MS = 5_000
/** An answer may come this much after HANDLER_TIMEOUT on a loaded machine (timers, the event loop). */
const SLACK_MS = 1_500
const DATABASE = 'receivables'
const SERVICE_ROLE = { user: 'receivables', password: randomUUID() }
/** Sellers of their own for route 5 (one open solicitation per buyer and seller): one per write. */
const EXTRA_SELLERS = 600

const INSTANCE_ENV = {
  LOG_LEVEL: 'warn',
  ACCESS_TOKEN_TTL: '1h',
  HANDLER_TIMEOUT: `${HANDLER_TIMEOUT_MS}ms`,
  DATABASE_CONNECT_TIMEOUT: '1s',
  DATABASE_STATEMENT_TIMEOUT: '2s',
  DRAIN_DELAY: '0',
}

const { roles, titles } = DEMO
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const sellerId = (n: number) => `f0000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const newCnpj = () => {
  const base = Array.from({ length: 12 }, () => Math.floor(Math.random() * 10)).join('')
  return `${base}${cnpjCheckDigits(base)}`
}

interface Attempt {
  kind: 'write' | 'read'
  route: string
  startedAt: number
  endedAt: number
  status: number | string
  retryAfter: string | undefined
  code: string | undefined
  /** The start of a refusal's body, for a failure's message. */
  body: string | undefined
}

/** A keyed write: sent again, as the client package (packages/client) does, with the same key and body. */
interface Operation {
  route: 'route 11' | 'route 5'
  path: string
  token: string
  key: string
  body: Record<string, string>
  /** The answer the partner kept: the last attempt's. */
  answer?: Answer
}

const isRetryable = (answer: Answer | Error) =>
  answer instanceof Error || [429, 502, 503, 504].includes(answer.status) || (answer.status === 409 && answer.body.includes('idempotency_key_in_use'))

/** Runs a set-up step again (up to 3 times) after the cluster has a primary behind the read-write address. */
async function settled<T>(cluster: HaCluster, step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step()
    } catch (error) {
      if (attempt === 3) throw error
      process.stderr.write(`failover: set-up step failed (${(error as Error).message}), again once the read-write address settles\n`)
      await cluster.waitForPrimary()
      await cluster.waitForReadWriteAddress({ timeoutMs: 30_000 })
    }
  }
}

describe.skipIf(unavailable !== undefined)('failover: the service on Patroni, etcd and HAProxy (deploy/ha/)', () => {
  let cluster: HaCluster
  let instances: ServerProcess[] = []
  let ports: number[] = []
  let alice: string
  let bob: string
  let dave: string
  let nextSeller = 1
  let turn = 0
  /** The primary killed by the first test, back as a standby for the second. */
  let killed: number | undefined

  /** The instances' errors in a line each (time, request, message, the service's frame that raised it), then the cluster's logs. */
  const logs = async () => {
    const errors = instances.flatMap((instance, index) =>
      instance.output
        .filter((line) => line.includes('"level":50'))
        .map((line) => {
          const entry = JSON.parse(line) as { time: number; request_id?: string; msg: string; err?: { message?: string; stack?: string } }
          const frame = entry.err?.stack?.split('\n').find((text) => text.includes('/src/'))
          return `instance ${index} ${entry.time} ${entry.request_id ?? '-'}: ${entry.msg}: ${entry.err?.message ?? ''} ${frame?.trim() ?? ''}`
        }),
    )
    return `${errors.slice(-60).join('\n')}\n${await cluster.logs(15)}`
  }

  /** One attempt on the next instance (round robin), recorded. */
  const send = async (
    attempts: Attempt[],
    kind: Attempt['kind'],
    route: string,
    options: { method?: string; path: string; token: string; key?: string; body?: unknown; port?: number },
  ): Promise<Answer | Error> => {
    const port = options.port ?? ports[turn++ % ports.length]!
    const startedAt = Date.now()
    const headers: Record<string, string> = { authorization: `Bearer ${options.token}`, ...(options.key ? { 'idempotency-key': options.key } : {}) }
    const answer = await request(port, { method: options.method, path: options.path, headers, body: options.body, timeoutMs: 30_000 }).catch(
      (error: Error) => error,
    )
    attempts.push({
      kind,
      route,
      startedAt,
      endedAt: Date.now(),
      status: answer instanceof Error ? `network error: ${answer.message}` : answer.status,
      retryAfter: answer instanceof Error ? undefined : (answer.headers['retry-after'] as string | undefined),
      code: answer instanceof Error || answer.status < 400 ? undefined : (JSON.parse(answer.body) as { code?: string }).code,
      body: answer instanceof Error || answer.status < 400 ? undefined : answer.body.slice(0, 300),
    })
    return answer
  }

  const customerWrite = (): Operation => ({
    route: 'route 11',
    path: `/api/company/v1/${roles.acmeSeller}/customers/${randomUUID()}`,
    token: alice,
    key: randomUUID(),
    body: { name: 'Failover Customer', tax_id: newCnpj() },
  })
  const solicitationWrite = (): Operation => ({
    route: 'route 5',
    path: `/api/company/v1/${roles.betaBuyer}/document-solicitation/${sellerId(nextSeller++)}`,
    token: bob,
    key: randomUUID(),
    body: { message: 'Documents for the failover test' },
  })

  /** Sends until an answer that is not worth another attempt, waiting Retry-After (at most 1 s here), for up to 20 s (a failover takes ~10). */
  const perform = async (attempts: Attempt[], operation: Operation): Promise<void> => {
    const deadline = Date.now() + 20_000
    for (let attempt = 1; ; attempt++) {
      const answer = await send(attempts, 'write', operation.route, { method: 'POST', ...operation })
      if (!(answer instanceof Error)) operation.answer = answer
      if (!isRetryable(answer) || Date.now() > deadline) return
      await sleep(answer instanceof Error ? 100 * Math.min(attempt, 5) : Math.min(1, Number(answer.headers['retry-after'] ?? 1)) * 1000)
    }
  }

  const reads = () => [
    { route: 'route 4', path: '/api/company/v1/get-user-companies', token: alice },
    { route: 'route 7', path: `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}`, token: bob },
    { route: 'route 9', path: `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`, token: bob },
  ]
  /** A role no request named yet: its first read on each instance also writes its chat presence (a side write). */
  const firstRead = () => ({ route: 'route 7', path: `/api/company/v1/${roles.deltaBuyer}/buyer/check-documents/${roles.gammaSeller}`, token: dave })

  const readiness = async (port: number) => (await request(port, { path: '/health/ready', timeoutMs: 5_000 }).catch(() => undefined))?.status

  beforeAll(async () => {
    const started = Date.now()
    cluster = await startHaCluster(3)
    const clusterMs = Date.now() - started
    // Under load a leader can change right after start (a late etcd write): each step waits for the
    // read-write address and runs again, so every one is written to be safe to repeat.
    await settled(cluster, async () => {
      const [role] = await cluster.sql('rw', 'SELECT 1 FROM pg_roles WHERE rolname = $1', [SERVICE_ROLE.user])
      if (!role) await cluster.sql('rw', `CREATE ROLE ${SERVICE_ROLE.user} LOGIN PASSWORD '${SERVICE_ROLE.password}'`)
      const [database] = await cluster.sql('rw', 'SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE])
      if (!database) await cluster.sql('rw', `CREATE DATABASE ${DATABASE} OWNER ${SERVICE_ROLE.user}`)
    })
    const url = cluster.url(DATABASE, SERVICE_ROLE)
    // What `npm run migrate` and `npm run seed` do, through the read-write address (the seed is one transaction).
    await settled(cluster, async () => {
      const handle = createPostgresDatabase({ connectionString: url, poolSize: 1 })
      try {
        await migrateToLatest(handle.db)
        await seedDemoUnlessPresent(handle.db)
      } finally {
        await handle.db.destroy()
      }
    })
    await settled(cluster, () =>
      cluster.sql(
        'rw',
        `INSERT INTO companies (id, name, trade_name, tax_id)
         SELECT md5('failover company ' || n)::uuid, 'Failover Seller ' || n, 'Seller ' || n, 'F' || lpad(n::text, 11, '0') || '00'
           FROM generate_series(1, $1::int) AS n
         ON CONFLICT DO NOTHING`,
        [EXTRA_SELLERS],
        DATABASE,
      ),
    )
    await settled(cluster, () =>
      cluster.sql(
        'rw',
        `INSERT INTO company_roles (id, company_id, role)
         SELECT ('f0000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid, md5('failover company ' || n)::uuid, 'seller'
           FROM generate_series(1, $1::int) AS n
         ON CONFLICT DO NOTHING`,
        [EXTRA_SELLERS],
        DATABASE,
      ),
    )
    instances = await Promise.all([0, 1].map(() => startServerProcess({ ...INSTANCE_ENV, DATABASE_URL: url })))
    ports = instances.map((instance) => Number(new URL(instance.baseUrl).port))
    const login = (email: string) => demoAccessToken(ports[0]!, email)
    alice = await login('alice@acme.example')
    bob = await login('bob@beta.example')
    dave = await login('dave@delta.example')
    process.stderr.write(`failover: cluster of 3 up in ${clusterMs} ms, database and instances ready ${Date.now() - started - clusterMs} ms later\n`)
  })

  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.cleanup()))
    await cluster?.stop()
  })

  it('loses no acknowledged write when the primary is killed under load: 503s with Retry-After, no 500, writes back within 10 s of the switch, every keyed write replayed', async () => {
    const attempts: Attempt[] = []
    const operations: Operation[] = []
    const old = await cluster.waitForPrimary()
    let running = true
    const writer = async (make: () => Operation) => {
      while (running) {
        const operation = make()
        operations.push(operation)
        await perform(attempts, operation)
      }
    }
    const reader = async (offset: number) => {
      for (let n = offset; running; n++) {
        const read = reads()[n % 3]!
        // A GET is safe to send again: once, after a 503.
        const answer = await send(attempts, 'read', read.route, read)
        if (isRetryable(answer)) await sleep(200)
      }
    }
    const load = [writer(customerWrite), writer(customerWrite), writer(solicitationWrite), reader(0), reader(1)]

    let killedAt = 0
    let promotedAt = 0
    let movedAt = 0
    let primary = -1
    try {
      await sleep(2_500)
      killedAt = Date.now()
      await cluster.killNode(old)
      killed = old
      // A new write every 250 ms, once each, until one is done: when writes are back, whatever the
      // writers above are still retrying.
      const probe = (async () => {
        while (Date.now() - killedAt < 40_000) {
          const operation = customerWrite()
          const answer = await send(attempts, 'write', operation.route, { method: 'POST', ...operation })
          if (!(answer instanceof Error) && answer.status === 201) {
            operations.push({ ...operation, answer })
            return
          }
          await sleep(250)
        }
      })()
      const [promoted, moved] = await Promise.all([
        cluster.waitForPrimary({ not: old, timeoutMs: 60_000 }).then((index) => ((promotedAt = Date.now()), index)),
        cluster.waitForReadWriteAddress({ not: old, timeoutMs: 60_000 }).then((index) => ((movedAt = Date.now()), index)),
      ])
      expect(moved).toBe(promoted)
      primary = promoted
      // Load goes on for 2 s once writes are back, as the old primary comes back (the next test).
      await probe
      await cluster.startNode(old)
      await sleep(2_000)
    } finally {
      running = false
      await Promise.all(load)
    }

    const writes = attempts.filter((attempt) => attempt.kind === 'write')
    const firstWrite = Math.min(
      ...writes.filter((attempt) => attempt.status === 201 && attempt.startedAt > killedAt).map((attempt) => attempt.endedAt),
    )
    const unavailable = attempts.filter((attempt) => attempt.status === 503)
    const serverErrors = attempts.filter((attempt) => typeof attempt.status !== 'number' || (attempt.status >= 500 && attempt.status !== 503))
    const longest = Math.max(...attempts.map((attempt) => attempt.endedAt - attempt.startedAt))
    const acknowledged = operations.filter((operation) => operation.answer?.status === 201)
    const customers = acknowledged
      .filter((operation) => operation.route === 'route 11')
      .map((operation) => JSON.parse(operation.answer!.body) as { id: string; tax_id: string })
    const solicitations = acknowledged
      .filter((operation) => operation.route === 'route 5')
      .map((operation) => (JSON.parse(operation.answer!.body) as { id: string }).id)
    const beforeKill = writes.filter((attempt) => attempt.status === 201 && attempt.endedAt <= killedAt && attempt.endedAt > killedAt - 1_000).length

    // On the new primary itself, not through the address: every write a partner was told succeeded.
    const foundCustomers = await cluster.sql<{ id: string; tax_id: string }>(
      primary,
      'SELECT id::text, tax_id FROM customers WHERE id = ANY($1::uuid[])',
      [customers.map((customer) => customer.id)],
      DATABASE,
    )
    const foundSolicitations = await cluster.sql<{ id: string }>(
      primary,
      'SELECT id::text FROM document_solicitations WHERE id = ANY($1::uuid[])',
      [solicitations],
      DATABASE,
    )

    // Every acknowledged keyed write, sent again with its key: the same answer, replayed.
    const replays: Attempt[] = []
    const notReplayed: string[] = []
    for (let start = 0; start < acknowledged.length; start += 8) {
      await Promise.all(
        acknowledged.slice(start, start + 8).map(async (operation) => {
          const answer = await send(replays, 'write', operation.route, { method: 'POST', ...operation })
          if (
            answer instanceof Error ||
            answer.status !== 201 ||
            answer.headers['idempotent-replayed'] !== 'true' ||
            answer.body !== operation.answer!.body
          ) {
            notReplayed.push(
              `${operation.route} ${operation.key}: ${answer instanceof Error ? answer.message : `${answer.status} ${answer.headers['idempotent-replayed'] ?? '-'} ${answer.body.slice(0, 160)}`}`,
            )
          }
        }),
      )
    }

    process.stderr.write(
      `failover: primary ${cluster.nodes[old]!.name} killed; ${cluster.nodes[primary]!.name} promoted after ${promotedAt - killedAt} ms, ` +
        `the read-write address moved after ${movedAt - killedAt} ms, first 2xx write after ${firstWrite - killedAt} ms ` +
        `(${firstWrite - movedAt} ms after the move); ${attempts.length} requests (${writes.length} write attempts, ${operations.length} keyed writes), ` +
        `${unavailable.length} answered 503 (${unavailable.filter((attempt) => attempt.kind === 'write').length} writes), ` +
        `${serverErrors.length} other 5xx or network errors, longest ${longest} ms; acknowledged ${acknowledged.length} ` +
        `(${customers.length} route 11, ${solicitations.length} route 5; ${beforeKill} in the last second before the kill), ` +
        `found ${foundCustomers.length + foundSolicitations.length} on the new primary; replayed ${acknowledged.length - notReplayed.length}\n`,
    )

    // Soft: a failure names every broken promise of the run at once.
    expect
      .soft(
        serverErrors.map((attempt) => `${attempt.route} ${attempt.status} ${attempt.body ?? ''}`),
        await logs(),
      )
      .toEqual([])
    expect.soft(unavailable.filter((attempt) => attempt.retryAfter === undefined || attempt.code !== 'service_unavailable')).toEqual([])
    expect.soft(longest).toBeLessThanOrEqual(HANDLER_TIMEOUT_MS + SLACK_MS)
    expect.soft(acknowledged.length).toBeGreaterThan(10)
    expect
      .soft(foundCustomers.map((row) => `${row.id} ${row.tax_id}`).sort())
      .toEqual(customers.map((customer) => `${customer.id} ${customer.tax_id}`).sort())
    expect.soft(foundSolicitations.map((row) => row.id).sort()).toEqual([...solicitations].sort())
    expect.soft(firstWrite - movedAt).toBeLessThan(10_000)
    expect.soft(notReplayed).toEqual([])
    // No write left in limbo: each one, retried with its key, was done within the partner's retries.
    expect
      .soft(
        operations
          .filter((operation) => operation.answer?.status !== 201)
          .map((operation) => `${operation.route} ${operation.answer?.status} ${operation.answer?.body.slice(0, 160)}`),
      )
      .toEqual([])
  })

  it('answers writes 503 with Retry-After and readiness 503 while the read-write address points at the old primary back as a standby; back within 5 s', async () => {
    // Run alone (-t), any standby stands for the old primary.
    const primaryNow = await cluster.waitForPrimary()
    const old = killed ?? cluster.nodes.find((node) => node.index !== primaryNow)!.index
    const waitedAt = Date.now()
    if (!cluster.running(old)) await cluster.startNode(old)
    await cluster.waitForStandby(old, 90_000)
    process.stderr.write(`failover: ${cluster.nodes[old]!.name} back as a standby (pg_rewind), waited ${Date.now() - waitedAt} ms more\n`)
    for (const port of ports) expect(await readiness(port)).toBe(200)

    const attempts: Attempt[] = []
    const refused: Operation[] = []
    const readinessSeen: (number | undefined)[] = []
    const restore = await cluster.pointReadWriteAt(old)
    const pointedAt = Date.now()
    const [recovery] = await cluster.sql<{ in_recovery: boolean }>('rw', 'SELECT pg_is_in_recovery() AS in_recovery')
    expect(recovery!.in_recovery).toBe(true)
    let restoredAt = 0
    try {
      const until = Date.now() + 3_000
      for (let n = 0; Date.now() < until; n++) {
        const operation = n % 2 === 0 ? customerWrite() : solicitationWrite()
        // The first reads of a new role, on each instance: their presence write meets the read-only database.
        const read = n < ports.length ? { ...firstRead(), port: ports[n] } : reads()[n % 3]!
        const [answer] = await Promise.all([
          send(attempts, 'write', operation.route, { method: 'POST', ...operation }),
          send(attempts, 'read', read.route, read),
        ])
        if (!(answer instanceof Error) && answer.status >= 500) refused.push(operation)
        await sleep(100)
      }
      // Readiness has had time to see it (its probe runs on each call).
      for (const port of ports) readinessSeen.push(await readiness(port))
    } finally {
      await restore()
      restoredAt = Date.now()
    }

    // Back: the first write answered 201 and both instances ready again.
    let writesBackAt = 0
    let readyAt = 0
    const backAttempts: Attempt[] = []
    while (Date.now() - restoredAt < 15_000 && (writesBackAt === 0 || readyAt === 0)) {
      if (writesBackAt === 0) {
        const answer = await send(backAttempts, 'write', 'route 11', { method: 'POST', ...customerWrite() })
        if (!(answer instanceof Error) && answer.status === 201) writesBackAt = Date.now()
      }
      if (readyAt === 0 && (await Promise.all(ports.map(readiness))).every((status) => status === 200)) readyAt = Date.now()
      await sleep(100)
    }
    // A write refused meanwhile did nothing: retried with its key as a partner does, it runs now (no replay of the refusal).
    const retried = refused.slice(0, 10).map((operation) => ({ ...operation, answer: undefined }) as Operation)
    await Promise.all(retried.map((operation) => perform(backAttempts, operation)))

    const writes = attempts.filter((attempt) => attempt.kind === 'write')
    const readAnswers = attempts.filter((attempt) => attempt.kind === 'read')
    const tally = (list: Attempt[]) => {
      const counts = new Map<string, number>()
      for (const attempt of list) counts.set(String(attempt.status), (counts.get(String(attempt.status)) ?? 0) + 1)
      return [...counts].map(([status, count]) => `${status}×${count}`).join(' ')
    }
    process.stderr.write(
      `failover: read-only address for ${restoredAt - pointedAt} ms: writes ${tally(writes)}, reads ${tally(readAnswers)}, ` +
        `readiness ${readinessSeen.join('/')}; after it points at the primary again: writes back after ${writesBackAt ? writesBackAt - restoredAt : 'never'} ms, ` +
        `both ready after ${readyAt ? readyAt - restoredAt : 'never'} ms\n`,
    )

    expect
      .soft(
        writes.filter((attempt) => attempt.status !== 503).map((attempt) => `${attempt.route} ${attempt.status} ${attempt.body ?? ''}`),
        await logs(),
      )
      .toEqual([])
    expect.soft(writes.filter((attempt) => attempt.retryAfter === undefined || attempt.code !== 'service_unavailable').length).toBe(0)
    // A standby serves reads; a side write (chat presence) that it refuses never changes an answer.
    expect
      .soft(
        readAnswers
          .filter((attempt) => attempt.status !== 200 && attempt.status !== 503)
          .map((attempt) => `${attempt.route} ${attempt.status} ${attempt.body ?? ''}`),
      )
      .toEqual([])
    expect.soft(readinessSeen).toEqual(ports.map(() => 503))
    expect.soft(writesBackAt - restoredAt).toBeGreaterThan(0)
    expect.soft(writesBackAt - restoredAt).toBeLessThan(5_000)
    expect.soft(readyAt - restoredAt).toBeGreaterThan(0)
    expect.soft(readyAt - restoredAt).toBeLessThan(5_000)
    // A 5xx means nothing was done: the same key, sent again, runs the write now.
    expect
      .soft(
        retried.map(({ answer }) =>
          answer === undefined
            ? 'no answer'
            : `${answer.status} ${answer.headers['idempotent-replayed'] ?? 'not replayed'}${answer.status === 201 ? '' : ` ${answer.body.slice(0, 200)} (request ${answer.headers['x-request-id']})`}`,
        ),
      )
      .toEqual(retried.map(() => '201 not replayed'))
  })
})

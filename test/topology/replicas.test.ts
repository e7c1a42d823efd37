import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEMO_PASSWORD } from '../../db/seed/demo.js'
import { DEMO } from '../../db/seed/ids.js'
import { createDemoDatabase } from '../helpers/database.js'
import { freePort } from '../helpers/ports.js'
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js'
import { startStreamingCluster, streamingUnavailable, type StreamingCluster } from './streaming.js'
import { demoAccessToken, request } from './topology.js'

/**
 * Reads on streaming replicas (issue 35): a primary and two replicas made by pg_basebackup, each
 * replica 2 s behind (recovery_min_apply_delay), a commit on the primary every 100 ms (so that a
 * delay is a lag), and two instances of the service sharing Redis. It makes its own servers, so it
 * runs in the PostgreSQL run only (TEST_DATABASE_URL), like the failover test.
 */
const unavailable = process.env.TEST_DATABASE_URL
  ? streamingUnavailable()
  : 'replica tests skipped: they run with TEST_DATABASE_URL (the PostgreSQL run)'
if (unavailable) process.stderr.write(`${unavailable}\n`)

const DATABASE = 'receivables'
const MAX_LAG_S = 3
/** Its own Redis database: the demo users' positions must not meet another test's. */
const REDIS_URL = `${process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'}/11`
const EXTRA_SELLERS = 10
const { roles, titles } = DEMO
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const sellerId = (n: number) => `e0000000-0000-4000-8000-${String(n).padStart(12, '0')}`

/** The tenancy statement of a read: the only statements that carry this column. */
const READS = `SELECT coalesce(sum(calls), 0)::int AS calls FROM pg_stat_statements WHERE query LIKE '%data_found%'`

describe.skipIf(unavailable !== undefined)('reads on streaming replicas (DATABASE_REPLICA_URLS)', () => {
  let cluster: StreamingCluster
  let instances: ServerProcess[] = []
  let ports: number[] = []
  let metricsPorts: number[] = []
  let alice: string
  let bob: string
  let ticking = true
  let ticker: Promise<void> | undefined

  /** The read statements each node has run so far (primary first). */
  const statements = async () => Promise.all(cluster.nodes.map(async (_, index) => (await cluster.sql<{ calls: number }>(index, READS))[0]!.calls))
  const metric = async (index: number, name: string) => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPorts[index]}/metrics`)).text()
    return Object.fromEntries(
      text
        .split('\n')
        .filter((line) => line.startsWith(`${name}{`))
        .map((line) => [line.slice(name.length, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1))]),
    )
  }
  const replicaLabel = (index: number) => `{replica="127.0.0.1:${cluster.nodes[index]!.port}"}`

  const reads = () => [
    { path: '/api/company/v1/get-user-companies', token: alice },
    { path: `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}`, token: bob },
    { path: `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`, token: bob },
  ]
  /** At least `count` reads of routes 4, 7 and 9 on both instances, `concurrency` at a time, and on until `done()` holds; their statuses. */
  const readLoad = async (count: number, concurrency = 6, done = () => true): Promise<(number | string)[]> => {
    const statuses: (number | string)[] = []
    let next = 0
    const worker = async () => {
      while (next < count || !done()) {
        const n = next++
        const read = reads()[n % 3]!
        const answer = await request(ports[n % 2]!, { path: read.path, headers: { authorization: `Bearer ${read.token}` } }).catch(
          (error: Error) => error,
        )
        statuses.push(answer instanceof Error ? answer.message : answer.status)
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
    return statuses
  }

  beforeAll(async () => {
    const started = Date.now()
    cluster = await startStreamingCluster(['2s', '2s'], (primaryUrl) => createDemoDatabase(primaryUrl, DATABASE))
    await cluster.sql(0, 'CREATE TABLE replica_ticks (at timestamptz NOT NULL DEFAULT now())', [], DATABASE)
    await cluster.sql(
      0,
      `INSERT INTO companies (id, name, trade_name, tax_id)
       SELECT md5('replica company ' || n)::uuid, 'Replica Seller ' || n, 'Seller ' || n, 'R' || lpad(n::text, 11, '0') || '00'
         FROM generate_series(1, $1::int) AS n;`,
      [EXTRA_SELLERS],
      DATABASE,
    )
    await cluster.sql(
      0,
      `INSERT INTO company_roles (id, company_id, role)
       SELECT ('e0000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid, md5('replica company ' || n)::uuid, 'seller'
         FROM generate_series(1, $1::int) AS n`,
      [EXTRA_SELLERS],
      DATABASE,
    )
    // A commit every 100 ms: a replica's delay becomes its lag (an idle primary leaves nothing to be behind on).
    ticker = (async () => {
      while (ticking) {
        await cluster.sql(0, 'INSERT INTO replica_ticks DEFAULT VALUES', [], DATABASE).catch(() => undefined)
        await sleep(100)
      }
    })()
    const clusterMs = Date.now() - started
    metricsPorts = [await freePort(), await freePort()]
    const env = (index: number) => ({
      LOG_LEVEL: 'warn',
      ACCESS_TOKEN_TTL: '1h',
      DATABASE_URL: cluster.url(0, DATABASE),
      DATABASE_REPLICA_URLS: `${cluster.url(1, DATABASE)},${cluster.url(2, DATABASE)}`,
      DATABASE_REPLICA_MAX_LAG: `${MAX_LAG_S}s`,
      DATABASE_CONNECT_TIMEOUT: '1s',
      DATABASE_STATEMENT_TIMEOUT: '2s',
      REDIS_URL,
      METRICS_PORT: String(metricsPorts[index]),
      DRAIN_DELAY: '0',
    })
    instances = await Promise.all([0, 1].map((index) => startServerProcess(env(index))))
    ports = instances.map((instance) => Number(new URL(instance.baseUrl).port))
    const login = (email: string) => demoAccessToken(ports[0]!, email)
    alice = await login('alice@acme.example')
    bob = await login('bob@beta.example')
    // The new token families reach the replicas 2 s later (meanwhile the primary confirms each refusal).
    await sleep(2_500)
    process.stderr.write(
      `replicas: primary and 2 replicas (migrated, seeded) in ${clusterMs} ms, 2 instances ready ${Date.now() - started - clusterMs} ms later\n`,
    )
  })

  afterAll(async () => {
    ticking = false
    await ticker
    await Promise.all(instances.map((instance) => instance.cleanup()))
    await cluster?.stop()
  })

  it('serves under 10 % of the read statements on the primary under a read load', async () => {
    const before = await statements()
    const statuses = await readLoad(300)
    const after = await statements()
    const [primary, ...replicas] = after.map((calls, index) => calls - before[index]!)
    const total = primary! + replicas.reduce((sum, calls) => sum + calls, 0)
    process.stderr.write(`replicas: 300 reads of routes 4, 7, 9: primary ${primary}, replicas ${replicas.join(' + ')} statements\n`)
    expect(statuses.filter((status) => status !== 200)).toEqual([])
    expect(total).toBeGreaterThanOrEqual(300)
    expect(primary! / total).toBeLessThan(0.1)
    expect(replicas.every((calls) => calls > 0)).toBe(true)
  })

  it('shows a caller its write at once on another instance, though both replicas are 2 s behind (route 5, then route 7)', async () => {
    const seller = sellerId(1)
    const created = await request(ports[0]!, {
      method: 'POST',
      path: `/api/company/v1/${roles.betaBuyer}/document-solicitation/${seller}`,
      headers: { authorization: `Bearer ${bob}` },
      body: { message: 'Documents, please' },
    })
    expect(created.status, created.body).toBe(201)
    const { id } = JSON.parse(created.body) as { id: string }
    const checked = await request(ports[1]!, {
      path: `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${seller}`,
      headers: { authorization: `Bearer ${bob}` },
    })
    // The replicas have not replayed it yet: the answer above could only come from the primary.
    const onReplicas = await Promise.all(
      [1, 2].map((index) => cluster.sql(index, 'SELECT 1 FROM document_solicitations WHERE id = $1', [id], DATABASE)),
    )
    expect(checked.status, checked.body).toBe(200)
    expect((JSON.parse(checked.body) as { open_solicitation: { id: string } | null }).open_solicitation?.id).toBe(id)
    expect(onReplicas.map((rows) => rows.length)).toEqual([0, 0])
    expect((await metric(1, 'db_reads_total'))['{target="primary",reason="own_write"}']).toBeGreaterThanOrEqual(1)
  })

  it("admits a fresh login's first read at once, though its token family is not on the replicas yet (the primary confirms)", async () => {
    const login = await request(ports[0]!, {
      method: 'POST',
      path: '/api/auth/v1/token',
      body: { email: 'alice@acme.example', password: DEMO_PASSWORD },
    })
    expect(login.status, login.body).toBe(200)
    const { access } = JSON.parse(login.body) as { access: string }
    const confirmed = async () => (await metric(1, 'db_reads_total'))['{target="primary",reason="confirm"}'] ?? 0
    const before = await confirmed()
    const companies = await request(ports[1]!, { path: '/api/company/v1/get-user-companies', headers: { authorization: `Bearer ${access}` } })
    expect(companies.status, companies.body).toBe(200)
    expect(await confirmed()).toBe(before + 1)
  })

  it('skips a replica delayed past DATABASE_REPLICA_MAX_LAG until it catches up', async () => {
    await cluster.setDelay(2, '10s')
    try {
      let lag = 0
      for (const deadline = Date.now() + 15_000; Date.now() < deadline && lag <= MAX_LAG_S + 1; await sleep(250)) {
        lag = Math.min(...(await Promise.all([0, 1].map(async (index) => (await metric(index, 'db_replica_lag_seconds'))[replicaLabel(2)] ?? 0))))
      }
      expect(lag).toBeGreaterThan(MAX_LAG_S)
      const before = await statements()
      const statuses = await readLoad(120)
      const after = await statements()
      const served = after.map((calls, index) => calls - before[index]!)
      process.stderr.write(
        `replicas: replica 2 at ${lag} s of lag (bound ${MAX_LAG_S} s): 120 reads, primary ${served[0]}, replica 1 ${served[1]}, replica 2 ${served[2]}\n`,
      )
      expect(statuses.filter((status) => status !== 200)).toEqual([])
      expect(served[2]).toBe(0)
      expect(served[1]).toBeGreaterThanOrEqual(108)
    } finally {
      await cluster.setDelay(2, '2s')
    }
    // Back under the bound (on both instances), it takes reads again.
    let lag = Infinity
    for (const deadline = Date.now() + 15_000; Date.now() < deadline && lag > MAX_LAG_S; await sleep(250)) {
      lag = Math.max(
        ...(await Promise.all([0, 1].map(async (index) => (await metric(index, 'db_replica_lag_seconds'))[replicaLabel(2)] ?? Infinity))),
      )
    }
    expect(lag).toBeLessThanOrEqual(MAX_LAG_S)
    const before = await statements()
    await readLoad(60)
    const after = await statements()
    expect(after[2]! - before[2]!).toBeGreaterThan(0)
  })

  it('costs no request when a replica stops mid-load', async () => {
    // The load goes on past the stop by more than a poll (1 s), so that both instances meet the stopped
    // replica, by a read or by a poll, however fast the machine runs the first reads.
    const stopped: { at?: number } = {}
    const load = readLoad(400, 6, () => stopped.at !== undefined && Date.now() - stopped.at >= 2_500)
    await sleep(500)
    await cluster.stopNode(1)
    stopped.at = Date.now()
    const statuses = await load
    expect(statuses.filter((status) => status !== 200)).toEqual([])
    expect(statuses.length).toBeGreaterThanOrEqual(400)
    const upOf = async () => Promise.all([0, 1].map(async (index) => (await metric(index, 'db_replica_up'))[replicaLabel(1)]))
    let up = await upOf()
    for (const deadline = Date.now() + 5_000; Date.now() < deadline && up.some((value) => value !== 0); await sleep(250)) up = await upOf()
    expect(up).toEqual([0, 0])
    const fallbacks = (
      await Promise.all([0, 1].map(async (index) => (await metric(index, 'db_reads_total'))['{target="primary",reason="fallback"}'] ?? 0))
    ).reduce((sum, count) => sum + count, 0)
    process.stderr.write(
      `replicas: replica 1 stopped under ${statuses.length} reads (2.5 s of them after the stop): 0 errors, ${fallbacks} reads retried on the primary\n`,
    )
  })
})

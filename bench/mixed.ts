/**
 * `npm run bench:mixed` (issue 45): the read routes 4, 7 and 9 at full load while refresh chains
 * (about one refresh per `--refresh-share` reads) and a trickle of logins run beside them for
 * `--duration` seconds, then the same reads with nothing else running, on the same database: what
 * a fleet lives with once tokens have rotated all day, against the figure of a fresh database
 * measured first in the same run. Each read also runs against its own SQL in a bare handler
 * (bench/own-sql-floor.ts), fresh and after. On a shared machine compare the ratios of one run,
 * not figures of two. See bench/README.md.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { DEMO_PASSWORD } from '../db/seed/demo.js'
import { createRefreshTokens, databaseName, recreateBenchDatabase } from './database.js'
import { runLoad, type LoadResult } from './load.js'
import { installCleanup, stopAllChildren } from './processes.js'
import { median, perRequestMicros } from './report.js'
import { READS, type LoadSpec } from './scenarios.js'
import { startOwnSqlFloor, startService, type RunningServer } from './servers.js'

const HELP = `npm run bench:mixed -- [options]
  --duration S        seconds of reads beside refreshes and logins (default 240: several autovacuum naptimes)
  --window S          seconds per read run; the routes take turns (default 8)
  --warmup S          seconds of unrecorded load per route and server first (default 3)
  --refresh-share N   reads per refresh, from the fresh read rate (default 20)
  --refresh-rate N    refreshes per second instead (to load two checkouts alike at once)
  --chains N          refresh chains: families refreshing one after another (default 50)
  --login-rate N      logins per second (default 2)
  --connections N     read connections (default 10)
  --database-url URL  dropped and re-created (default postgres://postgres@127.0.0.1:5432/bench_mixed)`

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '240' },
    window: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '3' },
    'refresh-share': { type: 'string', default: '20' },
    'refresh-rate': { type: 'string' },
    chains: { type: 'string', default: '50' },
    'login-rate': { type: 'string', default: '2' },
    connections: { type: 'string', default: '10' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/bench_mixed' },
    help: { type: 'boolean', default: false },
  },
})
if (values.help) {
  process.stdout.write(`${HELP}\n`)
  process.exit(0)
}
const options = {
  duration: Number(values.duration),
  window: Number(values.window),
  warmup: Number(values.warmup),
  refreshShare: Number(values['refresh-share']),
  refreshRate: values['refresh-rate'] === undefined ? undefined : Number(values['refresh-rate']),
  chains: Number(values.chains),
  loginRate: Number(values['login-rate']),
  connections: Number(values.connections),
  databaseUrl: values['database-url'],
}
const say = (text: string): void => void process.stdout.write(`${text}\n`)
const ROUTES = ['r4', 'r7', 'r9']
const LOGIN_USERS = ['alice@acme.example', 'bob@beta.example', 'carol@gamma.example', 'dave@delta.example', 'erin@acme.example']
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

interface Route {
  id: string
  spec: LoadSpec
}

interface Pair {
  service: LoadResult
  floor: LoadResult
}

/** Requests at a steady rate shared by several loops: each waits for its slot (no catching up in bursts). */
class Pace {
  private slots = 0
  private readonly startedAt = performance.now()
  constructor(private readonly perSecond: number) {}
  async next(): Promise<void> {
    const due = this.startedAt + (this.slots++ * 1000) / this.perSecond
    const wait = due - performance.now()
    if (wait > 0) await sleep(wait)
    else this.slots = Math.max(this.slots, Math.floor(((performance.now() - this.startedAt) * this.perSecond) / 1000))
  }
}

interface ChurnFigures {
  refreshes: number
  refreshFailures: number
  refreshP99Ms: number
  logins: number
  loginFailures: number
  /** Failed answers by route and status, e.g. `refresh 503`. */
  failures: Record<string, number>
  seconds: number
}

const percentile99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)] ?? 0

/** Refresh chains (each spends its token and keeps the successor, as a client does) and logins, until stopped. */
function startChurn(baseUrl: string, tokens: string[], refreshPerSecond: number, loginPerSecond: number) {
  let stopped = false
  const startedAt = performance.now()
  const figures = { refreshes: 0, refreshFailures: 0, logins: 0, loginFailures: 0 }
  const failures: Record<string, number> = {}
  const failed = (what: string, status: number) => void (failures[`${what} ${status}`] = (failures[`${what} ${status}`] ?? 0) + 1)
  const refreshTimes: number[] = []
  const post = (path: string, body: unknown) =>
    fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const refreshPace = new Pace(refreshPerSecond)
  const loginPace = new Pace(loginPerSecond)
  async function chain(token: string): Promise<void> {
    while (!stopped) {
      await refreshPace.next()
      const sent = performance.now()
      const response = await post('/api/auth/v1/token/refresh', { refresh: token })
      refreshTimes.push(performance.now() - sent)
      if (!response.ok) {
        figures.refreshFailures += 1
        failed('refresh', response.status)
        await response.arrayBuffer()
        return
      }
      token = ((await response.json()) as { refresh: string }).refresh
      figures.refreshes += 1
    }
  }
  async function logins(offset: number): Promise<void> {
    for (let n = offset; !stopped; n += 2) {
      await loginPace.next()
      const response = await post('/api/auth/v1/token', { email: LOGIN_USERS[n % LOGIN_USERS.length], password: DEMO_PASSWORD })
      await response.arrayBuffer()
      if (response.ok) figures.logins += 1
      else {
        figures.loginFailures += 1
        failed('login', response.status)
      }
    }
  }
  const loops = [...tokens.map(chain), ...(loginPerSecond > 0 ? [logins(0), logins(1)] : [])]
  return {
    async stop(): Promise<ChurnFigures> {
      stopped = true
      await Promise.all(loops)
      return { ...figures, failures, refreshP99Ms: percentile99(refreshTimes), seconds: (performance.now() - startedAt) / 1000 }
    },
  }
}

const load = (server: RunningServer, spec: LoadSpec, seconds: number) =>
  runLoad({
    baseUrl: server.baseUrl,
    spec,
    connections: options.connections,
    durationSeconds: seconds,
    serverPid: server.pid,
    database: databaseName(options.databaseUrl),
  })

/** Every route on the service, then on its own-SQL floor. */
async function measureReads(routes: Route[], service: RunningServer, floor: RunningServer): Promise<Map<string, Pair>> {
  const pairs = new Map<string, Pair>()
  for (const route of routes) {
    const measured = await load(service, route.spec, options.window)
    pairs.set(route.id, { service: measured, floor: await load(floor, route.spec, options.window) })
  }
  return pairs
}

interface TableFigures {
  relname: string
  n_live_tup: string
  n_dead_tup: string
  n_tup_upd: string
  n_tup_hot_upd: string
  pages: string
  autovacuum_count: string
}

/** What the hot tables look like after the churn (pg_stat_user_tables; autovacuum's visits). */
async function tableFigures(): Promise<{ autovacuum: string; tables: TableFigures[] }> {
  const client = new pg.Client({ connectionString: options.databaseUrl })
  await client.connect()
  try {
    await client.query('SELECT pg_stat_force_next_flush()').catch(() => undefined)
    const autovacuum = (await client.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]!.autovacuum
    const { rows } = await client.query<TableFigures>(`
      SELECT relname, n_live_tup, n_dead_tup, n_tup_upd, n_tup_hot_upd, pg_relation_size(relid) / 8192 AS pages, autovacuum_count
        FROM pg_stat_user_tables
       WHERE relname IN ('users', 'token_families', 'token_family_rotations', 'company_role_presence')
       ORDER BY relname`)
    return { autovacuum, tables: rows }
  } finally {
    await client.end()
  }
}

const rps = (result: LoadResult) => result.requestsPerSecond
/** PostgreSQL's CPU per read; during the churn it includes the refreshes' and logins' statements. */
const postgresMicros = (result: LoadResult) => perRequestMicros(result.postgresCpuPercent, result)
const fixed = (value: number, digits = 0) => value.toFixed(digits)
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : '–')

interface Window {
  route: string
  result: LoadResult
}

function readTable(routes: Route[], fresh: Map<string, Pair>, during: Window[], after: Map<string, Pair>): string[] {
  const lines = [
    '| route | fresh req/s (p99 ms) | during: first / median / last req/s | during p99 ms, median | after req/s (p99 ms) | after / fresh | last during / first during | own SQL fresh / after req/s | service / own SQL fresh / after | server µs/req fresh / after | PG µs/req fresh / during / after |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ]
  for (const { id } of routes) {
    const before = fresh.get(id)!
    const later = after.get(id)!
    const windows = during.filter((window) => window.route === id).map((window) => window.result)
    const first = windows[0]!
    const last = windows.at(-1)!
    lines.push(
      `| ${id} | ${fixed(rps(before.service))} (${fixed(before.service.p99Ms, 1)}) | ${fixed(rps(first))} / ${fixed(median(windows.map(rps)))} / ${fixed(rps(last))} | ` +
        `${fixed(median(windows.map((window) => window.p99Ms)), 1)} | ${fixed(rps(later.service))} (${fixed(later.service.p99Ms, 1)}) | ` +
        `${ratio(rps(later.service), rps(before.service))} | ${ratio(rps(last), rps(first))} | ${fixed(rps(before.floor))} / ${fixed(rps(later.floor))} | ` +
        `${ratio(rps(before.service), rps(before.floor))} / ${ratio(rps(later.service), rps(later.floor))} | ` +
        `${fixed(perRequestMicros(before.service.serverCpuPercent, before.service))} / ${fixed(perRequestMicros(later.service.serverCpuPercent, later.service))} | ` +
        `${fixed(postgresMicros(before.service))} / ${fixed(median(windows.map(postgresMicros)))} / ${fixed(postgresMicros(later.service))} |`,
    )
  }
  return lines
}

async function main(): Promise<void> {
  installCleanup()
  const logs = mkdtempSync(join(tmpdir(), 'bench-mixed-'))
  const loadBefore = loadAverage()
  try {
    say(`bench database ${options.databaseUrl}: re-creating, migrating, seeding`)
    await recreateBenchDatabase(options.databaseUrl)
    const database = { kind: 'postgres' as const, url: options.databaseUrl }
    const service = await startService({ database, logLevel: 'info', poolSize: 10, logFile: join(logs, 'service.log') })
    const floor = await startOwnSqlFloor(options.databaseUrl, 10)
    const routes: Route[] = []
    for (const scenario of READS.filter((read) => ROUTES.includes(read.id))) {
      const phase = await scenario.prepare({ baseUrl: service.baseUrl, databaseUrl: options.databaseUrl, requestBudget: 0 })
      routes.push({ id: scenario.id, spec: phase() })
    }
    for (const route of routes) for (const server of [service, floor]) await load(server, route.spec, options.warmup)
    say('fresh: each route on the service, then on its own SQL')
    const fresh = await measureReads(routes, service, floor)
    const freshReads = median([...fresh.values()].map((pair) => rps(pair.service)))
    const refreshRate = options.refreshRate ?? freshReads / options.refreshShare
    say(`churn: ${fixed(refreshRate)} refreshes/s over ${options.chains} chains, ${options.loginRate} logins/s, for ${options.duration} s`)
    const churn = startChurn(service.baseUrl, await createRefreshTokens(options.databaseUrl, options.chains), refreshRate, options.loginRate)
    const during: Window[] = []
    const churnStart = performance.now()
    while ((performance.now() - churnStart) / 1000 < options.duration) {
      for (const route of routes) during.push({ route: route.id, result: await load(service, route.spec, options.window) })
    }
    const churned = await churn.stop()
    const stats = await tableFigures()
    say('after: each route again, nothing else running')
    const after = await measureReads(routes, service, floor)
    say('')
    say(
      `Reads ${ROUTES.join(', ')} (${options.connections} connections, ${options.window} s runs in turn) on one database: fresh, during ${fixed(churned.seconds)} s of refresh chains and logins, then after.`,
    )
    say(`Load average ${loadBefore} before, ${loadAverage()} after; autovacuum ${stats.autovacuum} on this server.`)
    say(
      `Churn: ${churned.refreshes} refreshes (${fixed(churned.refreshes / churned.seconds)}/s, target ${fixed(refreshRate)}/s${options.refreshRate === undefined ? ` = 1 per ${options.refreshShare} fresh reads` : ''}; ${churned.refreshFailures} failed; p99 ${fixed(churned.refreshP99Ms, 1)} ms) over ${options.chains} chains, ` +
        `${churned.logins} logins (${churned.loginFailures} failed).` +
        (Object.keys(churned.failures).length ? ` Failures: ${JSON.stringify(churned.failures)}.` : ''),
    )
    say('')
    for (const line of readTable(routes, fresh, during, after)) say(line)
    say('')
    say('| table | live rows | dead rows | updates | HOT updates | pages | autovacuums |')
    say('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for (const t of stats.tables)
      say(`| ${t.relname} | ${t.n_live_tup} | ${t.n_dead_tup} | ${t.n_tup_upd} | ${t.n_tup_hot_upd} | ${t.pages} | ${t.autovacuum_count} |`)
  } finally {
    await stopAllChildren()
    rmSync(logs, { recursive: true, force: true })
  }
}

await main()

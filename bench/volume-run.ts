/**
 * `npm run bench -- --volume production --scale <factor>` (issue 17): every route measured on the
 * demo data and on a production-like volume (db/seed/volume.ts at the given factor, ANALYZEd) in
 * one run, each read route beside its own-SQL floor (bench/own-sql-floor.ts); prints the ratios and
 * writes them into bench/RESULTS.md between the volume markers.
 */
import { randomUUID } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { DEMO } from '../db/seed/ids.js'
import { loadVolume, volumeCounts } from '../db/seed/volume.js'
import { cnpjCheckDigits } from '../src/lib/tax-id.js'
import { createPostgresDatabase } from '../src/db/database.js'
import { postgresVersion, recreateBenchDatabase } from './database.js'
import { runLoad, type LoadResult } from './load.js'
import { installCleanup, stopAllChildren, stopChild } from './processes.js'
import { LOGINS, REFRESH, WEBHOOK, accessToken, type LoadSpec, type Scenario } from './scenarios.js'
import { REPO_ROOT, startOwnSqlFloor, startService, type RunningServer } from './servers.js'

const say = (text: string): void => void process.stdout.write(`${text}\n`)

interface VolumeOptions {
  scale: number
  demoUrl: string
  volumeUrl: string
  duration: number
  warmup: number
  connections: number
  poolSize: number
  rounds: number
  probes: number
  out: string
  reuse: boolean
}

function parseVolumeOptions(argv: string[]): VolumeOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      volume: { type: 'string' },
      scale: { type: 'string', default: '0.05' },
      'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/bench' },
      'volume-database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/bench_volume' },
      duration: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '1' },
      connections: { type: 'string', default: '10' },
      'pool-size': { type: 'string', default: '10' },
      rounds: { type: 'string', default: '1' },
      probes: { type: 'string', default: '200' },
      out: { type: 'string', default: 'bench/RESULTS.md' },
      'reuse-volume': { type: 'boolean', default: false },
    },
  })
  if (values.volume !== 'production') throw new Error('--volume: only "production" is defined')
  return {
    scale: Number(values.scale),
    demoUrl: values['database-url']!,
    volumeUrl: values['volume-database-url']!,
    duration: Number(values.duration),
    warmup: Number(values.warmup),
    connections: Number(values.connections),
    poolSize: Number(values['pool-size']),
    rounds: Number(values.rounds),
    probes: Number(values.probes),
    out: values.out!,
    reuse: values['reuse-volume']!,
  }
}

/** A measured route: throughput and latency of a load, or latencies of sequential probes. */
interface Measurement {
  id: string
  label: string
  rps?: number
  p50: number
  p99: number
  non2xx?: number
  floor?: { rps: number; p50: number; p99: number }
}

const { roles, titles, companies } = DEMO

const READ_ROUTES = [
  { id: 'r4', label: '4 get-user-companies (alice)', email: 'alice@acme.example', path: '/api/company/v1/get-user-companies' },
  {
    id: 'r6',
    label: '6 chat partner presence (bob)',
    email: 'bob@beta.example',
    path: `/api/company/v1/${roles.betaBuyer}/chat/partners/${roles.acmeSeller}/presence`,
  },
  {
    id: 'r7',
    label: '7 check-documents (bob → Acme)',
    email: 'bob@beta.example',
    path: `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}`,
  },
  {
    id: 'r9',
    label: '9 title documents (bob, t1, 3 docs)',
    email: 'bob@beta.example',
    path: `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`,
  },
]

/** A new valid CNPJ per call: a customer's tax id is unique per seller. */
let cnpjSeq = Math.floor(Math.random() * 1e9)
function nextCnpj(): string {
  cnpjSeq += 1
  const base = `9${String(cnpjSeq).padStart(11, '0')}`
  return `${base}${cnpjCheckDigits(base)}`
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0

/** Sequential requests, one at a time, each timed alone: latency without queueing. */
async function probe(
  count: number,
  before: () => Promise<void>,
  request: () => Promise<Response>,
  expected: number,
): Promise<{ p50: number; p99: number }> {
  const times: number[] = []
  for (let n = 0; n < count; n += 1) {
    await before()
    const started = performance.now()
    const response = await request()
    const elapsed = performance.now() - started
    await response.arrayBuffer()
    if (response.status !== expected) throw new Error(`probe: expected ${expected}, got ${response.status}`)
    times.push(elapsed)
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99) }
}

class VolumeBench {
  constructor(private readonly options: VolumeOptions) {}

  private async load(baseUrl: string, spec: LoadSpec, pid: number, database: string): Promise<LoadResult> {
    const common = { baseUrl, connections: this.options.connections }
    if (this.options.warmup > 0) await runLoad({ ...common, spec, durationSeconds: this.options.warmup })
    return runLoad({ ...common, spec, durationSeconds: this.options.duration, serverPid: pid, database })
  }

  private async scenario(service: RunningServer, scenario: Scenario, databaseUrl: string, database: string): Promise<LoadResult> {
    const load = await scenario.prepare({
      baseUrl: service.baseUrl,
      databaseUrl,
      requestBudget: 3_000 * (this.options.duration + this.options.warmup),
    })
    if (this.options.warmup > 0)
      await runLoad({ baseUrl: service.baseUrl, connections: this.options.connections, spec: load(), durationSeconds: this.options.warmup })
    return runLoad({
      baseUrl: service.baseUrl,
      connections: this.options.connections,
      spec: load(),
      durationSeconds: this.options.duration,
      serverPid: service.pid,
      database,
    })
  }

  /** Every route on one database: the service and the own-SQL floor server both running, one loaded at a time. */
  async measureDatabase(databaseUrl: string): Promise<Measurement[]> {
    const database = new URL(databaseUrl).pathname.slice(1)
    const service = await startService({
      database: { kind: 'postgres', url: databaseUrl },
      logLevel: 'info',
      poolSize: this.options.poolSize,
      logFile: join(tmpdir(), `volume-bench-service-${process.pid}.log`),
    })
    const floor = await startOwnSqlFloor(databaseUrl, this.options.poolSize)
    const results: Measurement[] = []
    const report = (m: Measurement) => {
      results.push(m)
      const floorText = m.floor
        ? `  own-SQL floor ${m.floor.rps.toFixed(0)} req/s p99 ${m.floor.p99.toFixed(1)} ms (route/floor ${(m.rps! / m.floor.rps).toFixed(2)})`
        : ''
      say(
        `  ${m.label.padEnd(40)} ${m.rps === undefined ? '' : `${m.rps.toFixed(0).padStart(6)} req/s  `}p50 ${m.p50.toFixed(1)} ms  p99 ${m.p99.toFixed(1)} ms${m.non2xx ? `  non-2xx ${m.non2xx}` : ''}${floorText}`,
      )
    }
    try {
      for (const route of READ_ROUTES) {
        const token = await accessToken(service.baseUrl, route.email)
        const spec: LoadSpec = { path: route.path, method: 'GET', headers: { authorization: `Bearer ${token}` } }
        const own = await this.load(service.baseUrl, spec, service.pid, database)
        const bare = await this.load(floor.baseUrl, spec, floor.pid, database)
        report({
          id: route.id,
          label: route.label,
          rps: own.requestsPerSecond,
          p50: own.p50Ms,
          p99: own.p99Ms,
          non2xx: own.non2xx + bare.non2xx,
          floor: { rps: bare.requestsPerSecond, p50: bare.p50Ms, p99: bare.p99Ms },
        })
      }
      for (const scenario of [LOGINS[0]!, REFRESH, WEBHOOK]) {
        const result = await this.scenario(service, scenario, databaseUrl, database)
        report({
          id: scenario.id,
          label: `${scenario.route} ${scenario.label}`,
          rps: result.requestsPerSecond,
          p50: result.p50Ms,
          p99: result.p99Ms,
          non2xx: result.non2xx,
        })
      }
      const alice = await accessToken(service.baseUrl, 'alice@acme.example')
      const customers: LoadSpec = {
        path: `/api/company/v1/${roles.acmeSeller}/customers/x`,
        requests: [
          {
            method: 'POST',
            headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
            setupRequest: (request) => ({
              ...request,
              path: `/api/company/v1/${roles.acmeSeller}/customers/${randomUUID()}`,
              body: JSON.stringify({ name: 'Bench Payer Ltda', tax_id: nextCnpj() }),
            }),
          },
        ],
      }
      const r11 = await this.load(service.baseUrl, customers, service.pid, database)
      report({ id: 'r11', label: '11 customer upsert (new id each)', rps: r11.requestsPerSecond, p50: r11.p50Ms, p99: r11.p99Ms, non2xx: r11.non2xx })
      await this.writeProbes(service, databaseUrl, report)
    } finally {
      await stopChild(service.child)
      await stopChild(floor.child)
    }
    return results
  }

  /** Routes 5 (201 and 409) and 8 (204): sequential probes, the state reset between them by SQL. */
  private async writeProbes(service: RunningServer, databaseUrl: string, report: (m: Measurement) => void): Promise<void> {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      const bob = await accessToken(service.baseUrl, 'bob@beta.example')
      const alice = await accessToken(service.baseUrl, 'alice@acme.example')
      const solicit = () =>
        fetch(`${service.baseUrl}/api/company/v1/${roles.betaBuyer}/document-solicitation/${roles.gammaSeller}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json' },
          body: '{}',
        })
      const close = async () => {
        await client.query(
          `UPDATE document_solicitations SET status = 'cancelled', closed_at = now() WHERE buyer_company_role_id = $1 AND seller_company_role_id = $2 AND status = 'open'`,
          [roles.betaBuyer, roles.gammaSeller],
        )
      }
      const created = await probe(this.options.probes, close, solicit, 201)
      const conflict = await probe(this.options.probes, async () => undefined, solicit, 409)
      await close()
      let account = ''
      const addAccount = async () => {
        account = randomUUID()
        await client.query(
          `INSERT INTO bank_accounts (id, company_id, bank_code, branch, account_number, account_digit, account_type, holder_name, holder_tax_id)
           VALUES ($1, $2, '341', '0001', '99999', '1', 'checking', 'Acme Indústria Ltda', '11222333000181')`,
          [account, companies.acme],
        )
      }
      const remove = () =>
        fetch(`${service.baseUrl}/api/company/v1/${roles.acmeSeller}/bank-account/${account}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${alice}` },
        })
      const removed = await probe(this.options.probes, addAccount, remove, 204)
      const measurements: Measurement[] = [
        { id: 'r5-201', label: '5 solicitation 201 (sequential)', ...created },
        { id: 'r5-409', label: '5 solicitation 409 (sequential)', ...conflict },
        { id: 'r8-204', label: '8 bank account delete 204 (sequential)', ...removed },
      ]
      for (const m of measurements) report(m)
    } finally {
      await client.end()
    }
  }
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim()
  } catch {
    return ''
  }
}

/**
 * The volume section of RESULTS.md: kept by `npm run bench` when it rewrites the rest. Inside it,
 * the run's own figures sit between the run markers and are replaced by the next run; notes written
 * by hand around them stay.
 */
const START = '<!-- volume:start -->'
const END = '<!-- volume:end -->'
const RUN_START = '<!-- volume:run:start -->'
const RUN_END = '<!-- volume:run:end -->'

function renderRun(header: string[], rounds: { demo: Measurement[]; volume: Measurement[] }[]): string {
  const lines = [RUN_START, '', ...header, '']
  for (const [index, { demo, volume }] of rounds.entries()) {
    if (rounds.length > 1) lines.push(`Round ${index + 1}:`, '')
    lines.push('| route | demo | volume | volume/demo | own-SQL floor demo → volume | route/floor at volume |', '|---|---|---|---|---|---|')
    for (const d of demo) {
      const v = volume.find((m) => m.id === d.id)
      if (!v) continue
      const cell = (m: Measurement) =>
        `${m.rps === undefined ? '' : `${m.rps.toFixed(0)} req/s, `}p50 ${m.p50.toFixed(1)} ms, p99 ${m.p99.toFixed(1)} ms${m.non2xx ? ` (${m.non2xx} non-2xx)` : ''}`
      const ratio =
        d.rps !== undefined && v.rps !== undefined
          ? `${(v.rps / d.rps).toFixed(2)} × req/s, p99 ${(v.p99 / d.p99).toFixed(2)} ×`
          : `p50 ${(v.p50 / d.p50).toFixed(2)} ×, p99 ${(v.p99 / d.p99).toFixed(2)} ×`
      const floors = d.floor && v.floor ? `${d.floor.rps.toFixed(0)} → ${v.floor.rps.toFixed(0)} req/s` : ''
      const routeFloor = v.floor && v.rps !== undefined ? (v.rps / v.floor.rps).toFixed(2) : ''
      lines.push(`| ${d.label} | ${cell(d)} | ${cell(v)} | ${ratio} | ${floors} | ${routeFloor} |`)
    }
    lines.push('')
  }
  lines.push(RUN_END)
  return lines.join('\n')
}

/** Replaces the previous run's figures, or adds a volume section; the rest of the file is kept. */
function writeRun(file: string, run: string): void {
  let text = ''
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    text = ''
  }
  const runStart = text.indexOf(RUN_START)
  const runEnd = text.indexOf(RUN_END)
  const end = text.indexOf(END)
  let next: string
  if (runStart >= 0 && runEnd > runStart) next = `${text.slice(0, runStart)}${run}${text.slice(runEnd + RUN_END.length)}`
  else if (end >= 0) next = `${text.slice(0, end)}${run}\n\n${text.slice(end)}`
  else next = `${text.trimEnd()}\n\n${START}\n\n## Production volume (issue 17): \`npm run bench -- --volume production\`\n\n${run}\n\n${END}\n`
  writeFileSync(file, next)
}

export async function runVolumeBench(argv: string[]): Promise<void> {
  const options = parseVolumeOptions(argv)
  installCleanup()
  try {
    say(`demo database ${options.demoUrl}: re-creating, migrating, seeding, ANALYZE`)
    await recreateBenchDatabase(options.demoUrl)
    const generation = Date.now()
    if (!options.reuse) {
      say(`volume database ${options.volumeUrl}: the same, then the volume at factor ${options.scale}, ANALYZE`)
      await recreateBenchDatabase(options.volumeUrl)
      const handle = createPostgresDatabase({ connectionString: options.volumeUrl, poolSize: 1, preparedStatements: false })
      try {
        await loadVolume(handle.db, options.scale, (line) => say(`  ${line}`))
      } finally {
        await handle.db.destroy()
      }
    }
    const generationSeconds = (Date.now() - generation) / 1000
    const size = await databaseSize(options.volumeUrl)
    const rounds: { demo: Measurement[]; volume: Measurement[] }[] = []
    for (let round = 1; round <= options.rounds; round += 1) {
      say(`round ${round} of ${options.rounds}: demo data`)
      const demo = await new VolumeBench(options).measureDatabase(options.demoUrl)
      say(`round ${round} of ${options.rounds}: production volume at factor ${options.scale}`)
      const volume = await new VolumeBench(options).measureDatabase(options.volumeUrl)
      rounds.push({ demo, volume })
    }
    const dirty = git(['status', '--porcelain']).split('\n').filter(Boolean).length
    const cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown'
    const header = [
      `- Date ${new Date().toISOString()}, commit ${git(['rev-parse', 'HEAD'])}${dirty ? ` with uncommitted changes (${dirty} paths)` : ''}`,
      `- Machine: ${availableParallelism()} × ${cpuModel}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.version}, PostgreSQL ${await postgresVersion(options.demoUrl)}; load average before: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
      `- Volume factor ${options.scale} (${JSON.stringify(volumeCounts(options.scale))}), database ${size}, ${options.reuse ? 'reused from an earlier run' : `generated in ${generationSeconds.toFixed(0)} s (including the demo seed)`}; ANALYZE after loading (autovacuum is off on these machines)`,
      `- ${options.duration} s per load after ${options.warmup} s warm-up, ${options.connections} connections, pool ${options.poolSize}; routes 5 and 8: ${options.probes} sequential requests each, state reset by SQL between them`,
      // Its databases and output are bench:results' (the section's opening): the arguments that change a figure.
      `- Args: ${argv.filter((arg, index) => !/^--(database-url|volume-database-url|out)$/.test(arg) && !/^--(database-url|volume-database-url|out)$/.test(argv[index - 1] ?? '')).join(' ')}`,
    ]
    const run = renderRun(header, rounds)
    say(`\n${run}`)
    writeRun(resolve(REPO_ROOT, options.out), run)
    say(`\nwritten to ${options.out}`)
  } finally {
    await stopAllChildren()
  }
}

async function databaseSize(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ size: string }>('SELECT pg_size_pretty(pg_database_size(current_database())) AS size')
    return rows[0]?.size ?? '?'
  } finally {
    await client.end()
  }
}

import { execFile, execSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import autocannon from 'autocannon'
import { DEMO } from '../db/seed/ids.js'
import { recreateBenchDatabase } from './database.js'
import { installCleanup, rssMiB, stopChild } from './processes.js'
import { accessToken as loginOnce, REFRESH, WEBHOOK, type LoadSpec } from './scenarios.js'
import { startService, type RunningServer } from './servers.js'

/**
 * npm run bench:fairness (issue 46): one partner floods while another reads; many principals at
 * 5 × the instance's capacity; two instances sharing Redis. Prints a markdown section for
 * bench/RESULTS.md. `--seconds N` for each measurement (10), `--database-url` (bench_fairness).
 */

const argument = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at > 0 ? process.argv[at + 1]! : fallback
}
const SECONDS = Number(argument('seconds', '10'))
const DATABASE_URL = argument('database-url', 'postgres://postgres@127.0.0.1:5432/bench_fairness')
const REDIS_URL = argument('redis-url', 'redis://127.0.0.1:6379')
/** `--only fleet` (or `flood`): one part alone. */
const ONLY = argument('only', '')
const { roles, titles } = DEMO

interface Measured {
  rps: number
  byStatus: Record<string, number>
  p50: number
  p99: number
  /** p99 of the answers of each status, in ms. */
  p99ByStatus: Record<string, number>
  timeouts: number
  /** Requests sent, answered or not: autocannon counts no time-out for one the window ended on. */
  sent: number
}

const p = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0

interface Answer {
  /** 0: none within the time-out. */
  status: number
  ms: number
}

/** The answers' counts and latencies, overall and per status. */
function tally(answers: Answer[]): Pick<Measured, 'byStatus' | 'p50' | 'p99' | 'p99ByStatus'> {
  const byStatus: Record<string, number> = {}
  const p99ByStatus: Record<string, number> = {}
  for (const status of new Set(answers.map((answer) => answer.status))) {
    const times = answers.filter((answer) => answer.status === status).map(({ ms }) => ms)
    byStatus[status] = times.length
    p99ByStatus[status] = p(
      times.sort((a, b) => a - b),
      0.99,
    )
  }
  const all = answers.map(({ ms }) => ms).sort((a, b) => a - b)
  return { byStatus, p50: p(all, 0.5), p99: p(all, 0.99), p99ByStatus }
}

/** One autocannon load, its latencies kept per status. */
function measure(baseUrl: string, spec: LoadSpec, connections: number, seconds: number, overallRate?: number): Promise<Measured> {
  const { path, ...rest } = spec
  const answers: Answer[] = []
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url: baseUrl + path, ...rest, connections, duration: seconds, timeout: 10, ...(overallRate ? { overallRate } : {}) },
      (error, result) => {
        if (error) return reject(error)
        resolve({ rps: result.requests.average, ...tally(answers), timeouts: result.timeouts, sent: result.requests.sent })
      },
    )
    instance.on('response', (_client, status, _bytes, ms) => answers.push({ status, ms }))
  })
}

/** `spec`'s requests at `ratePerSecond` for `seconds`, sent by bench/paced.ts from a process of its own. */
async function paced(baseUrl: string, spec: LoadSpec, ratePerSecond: number, seconds: number): Promise<Measured> {
  const [template] = spec.requests as [{ method: string; headers?: Record<string, string>; setupRequest: (request: object) => { body?: string } }]
  const requests = Array.from({ length: ratePerSecond * seconds }, () => ({
    path: spec.path,
    method: template.method,
    headers: template.headers ?? {},
    body: template.setupRequest({}).body,
  }))
  const input = JSON.stringify({ baseUrl, ratePerSecond, timeoutMs: 10_000, requests })
  const output = await new Promise<string>((resolve, reject) => {
    const child = execFile(process.execPath, ['--import', 'tsx', 'bench/paced.ts'], { maxBuffer: 1 << 24 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    )
    child.stdin!.end(input)
  })
  const answers = JSON.parse(output) as Answer[]
  const answered = answers.filter(({ status }) => status !== 0)
  return { rps: answered.length / seconds, ...tally(answered), timeouts: answers.length - answered.length, sent: answers.length }
}

/** A login, tried again on a busy machine (its 503: the password-hashing queue full, or HANDLER_TIMEOUT). */
async function accessToken(baseUrl: string, email: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await loginOnce(baseUrl, email)
    } catch (error) {
      if (attempt >= 5) throw error
      await new Promise((resolve) => setTimeout(resolve, 2000))
    }
  }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const ms = (value: number) => `${value.toFixed(1)} ms`
/** Every status answered, e.g. `300 × 200, 2 × 429 (p99 1002.0 ms), 0 × 503`. */
const answered = (measured: Measured) =>
  Object.entries(measured.byStatus)
    .map(([status, count]) => `${count} × ${status}${status === '200' ? '' : ` (p99 ${ms(measured.p99ByStatus[status] ?? 0)})`}`)
    .join(', ') || `no answer of ${measured.sent} sent`
const lines: string[] = []
const say = (line = '') => {
  lines.push(line)
  console.log(line)
}

async function service(env: NodeJS.ProcessEnv = {}): Promise<RunningServer> {
  return startService({ database: { kind: 'postgres', url: DATABASE_URL }, logLevel: 'warn', poolSize: 10, env })
}

/** Bob floods route 9 on `connections` keep-alive connections while alice reads route 4 five times a second. */
async function flood(server: RunningServer): Promise<void> {
  const alice = {
    path: '/api/company/v1/get-user-companies',
    method: 'GET' as const,
    headers: bearer(await accessToken(server.baseUrl, 'alice@acme.example')),
  }
  const bobToken = await accessToken(server.baseUrl, 'bob@beta.example')
  const bob = { path: `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`, method: 'GET' as const, headers: bearer(bobToken) }
  const quiet = await measure(server.baseUrl, alice, 1, SECONDS, 5)
  say(`| quiet | — | ${ms(quiet.p50)} | ${ms(quiet.p99)} | — | — |`)
  for (const connections of [200, 1000]) {
    const flooding = measure(server.baseUrl, bob, connections, SECONDS + 2)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const during = await measure(server.baseUrl, alice, 1, SECONDS, 5)
    const bobs = await flooding
    const refused = await fetch(server.baseUrl + bob.path, { headers: bob.headers })
    say(
      `| bob on ${connections} connections | ${Math.round(Object.values(bobs.byStatus).reduce((a, b) => a + b, 0) / (SECONDS + 2))} | ${ms(during.p50)} | ${ms(during.p99)} (${answered(during)}; ${during.timeouts} time-outs) | ${answered(bobs)}, ${bobs.timeouts} time-outs | ${refused.status} Retry-After ${refused.headers.get('retry-after')} |`,
    )
    // The flood's window ends before the next measurement.
    await new Promise((resolve) => setTimeout(resolve, 10_000))
  }
}

/** Many principals' reads at 5 × the capacity, with refresh and webhook at a trickle: who is admitted, who shed. */
async function overload(server: RunningServer): Promise<void> {
  const emails = ['alice@acme.example', 'bob@beta.example', 'carol@gamma.example', 'dave@delta.example', 'erin@acme.example']
  const tokens = await Promise.all(emails.map((email) => accessToken(server.baseUrl, email)))
  let next = 0
  const reads: LoadSpec = {
    path: '/api/company/v1/get-user-companies',
    requests: [
      { method: 'GET', setupRequest: (request) => ({ ...request, headers: { ...request.headers, ...bearer(tokens[next++ % tokens.length]!) } }) },
    ],
  }
  const capacity = await measure(server.baseUrl, reads, 32, SECONDS)
  const rate = Math.round(capacity.rps * 5)
  const context = { baseUrl: server.baseUrl, databaseUrl: DATABASE_URL, requestBudget: 20 * SECONDS + 100 }
  const [refresh, webhook] = [(await REFRESH.prepare(context))(), (await WEBHOOK.prepare(context))()]
  const rssBefore = rssMiB(server.pid) ?? 0
  const [over, refreshes, webhooks] = await Promise.all([
    measure(server.baseUrl, reads, 1000, SECONDS, rate),
    paced(server.baseUrl, refresh, 10, SECONDS),
    paced(server.baseUrl, webhook, 10, SECONDS),
  ])
  const admitted = over.byStatus['200'] ?? 0
  const admittedRps = admitted / SECONDS
  say(`| capacity (32 connections, flat out) | ${Math.round(capacity.rps)}/s | p99 ${ms(capacity.p99)} |`)
  say(
    `| offered ${rate}/s on 1,000 connections | admitted ${Math.round(admittedRps)}/s (${((100 * admittedRps) / capacity.rps).toFixed(0)} % of capacity), p99 ${ms(over.p99ByStatus['200'] ?? 0)} | shed ${over.byStatus['503'] ?? 0} (p99 ${ms(over.p99ByStatus['503'] ?? 0)}), ${over.byStatus['429'] ?? 0} × 429, ${over.timeouts} time-outs |`,
  )
  say(
    `| refresh and webhook, 10/s each meanwhile | refresh ${answered(refreshes)} (${refreshes.timeouts} time-outs), webhook ${answered(webhooks)} (${webhooks.timeouts} time-outs) | RSS ${rssBefore} → ${rssMiB(server.pid) ?? 0} MiB |`,
  )
}

/** Two instances on one Redis, alice flooding both: the quota of the fleet, not of each. */
async function fleet(): Promise<void> {
  const quota = 300
  const env = { REDIS_URL, RATE_LIMITS: `reads=${quota}`, RATE_LIMIT_WINDOW: '60s', JWT_SIGNING_KEY: randomBytes(32).toString('hex') }
  const [one, two] = [await service(env), await service(env)]
  try {
    const token = await accessToken(one.baseUrl, 'alice@acme.example')
    const spec = { path: '/api/company/v1/get-user-companies', method: 'GET' as const, headers: bearer(token) }
    const answers = await Promise.all([one, two].map((server) => measure(server.baseUrl, spec, 50, SECONDS)))
    const admitted = answers.reduce((sum, answer) => sum + (answer.byStatus['200'] ?? 0), 0)
    const refused = answers.reduce((sum, answer) => sum + (answer.byStatus['429'] ?? 0), 0)
    say(
      `Two instances on one Redis, alice on 50 connections to each for ${SECONDS} s, quota ${quota} per 60 s: admitted ${admitted} (${((100 * (admitted - quota)) / quota).toFixed(1)} % off the quota: ${answers.map((a) => a.byStatus['200'] ?? 0).join(' + ')}), ${refused} × 429.`,
    )
  } finally {
    await Promise.all([one, two].map((server) => stopChild(server.child)))
  }
}

async function main(): Promise<void> {
  installCleanup()
  const commit = execSync('git rev-parse --short HEAD').toString().trim()
  say(`## Fair under load (npm run bench:fairness)`)
  say()
  say(
    `${new Date().toISOString().slice(0, 16)} UTC, commit ${commit}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}, PostgreSQL local; load average at start ${loadavg()
      .map((value) => value.toFixed(1))
      .join(
        ', ',
      )} (${loadavg()[0]! < cpus().length ? 'quiet: nothing else ran' : 'a busy machine: absolute figures are inflated, compare within a run'}). ${SECONDS} s per measurement, autocannon in the runner's process.`,
  )
  await recreateBenchDatabase(DATABASE_URL)
  if (ONLY !== 'fleet') await oneInstance()
  say()
  await fleet()
  say()
  say(
    `Load average at the end: ${loadavg()
      .map((value) => value.toFixed(1))
      .join(', ')}.`,
  )
}

async function oneInstance(): Promise<void> {
  // FAIRNESS_FLOOD_RATE_LIMITS: the flood's service settings (e.g. RATE_LIMITS=reads=500, for a machine too busy to reach the defaults).
  // The service's own defaults (startService lifts the limits out of reach for the other benches).
  const server = await service({ RATE_LIMITS: process.env.FAIRNESS_FLOOD_RATE_LIMITS, CONCURRENCY_LIMITS: undefined })
  // Only the shedder between the flood and the capacity: the principals' quotas out of reach.
  const unlimited = await service()
  try {
    say()
    say(
      `One partner floods route 9, another reads route 4 five times a second (RATE_LIMITS ${process.env.FAIRNESS_FLOOD_RATE_LIMITS ?? 'default: reads=3000'} per 10 s, 64 at once per user):`,
    )
    say()
    say('| load | bob req/s | alice p50 | alice p99 | bob | a refused request |')
    say('| --- | ---: | ---: | ---: | --- | --- |')
    await flood(server)
    say()
    say(
      'Five principals at 5 × the capacity of route 4, refresh and webhook beside them (default LOAD_SHED; their quotas lifted, so that only the shedder acts):',
    )
    say()
    say('| load | admitted | shed and refused |')
    say('| --- | --- | --- |')
    await overload(unlimited)
  } finally {
    await Promise.all([server, unlimited].map((one) => stopChild(one.child)))
  }
}

await main()

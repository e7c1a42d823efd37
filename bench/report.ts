import { productionNodeFlags } from './servers.js'
import type { LoadResult } from './load.js'
import type { StartTimes } from './processes.js'
import type { ProfileSummary } from './profile.js'
import type { Scenario } from './scenarios.js'

export interface MachineInfo {
  date: string
  commit: string
  cpus: number
  cpuModel: string
  memoryGiB: number
  node: string
  postgres: string
  threadpool: string
  /** Machine CPU use, in percent of all cores, in the seconds before and after the run. */
  backgroundBefore: number
  backgroundAfter: number | undefined
  loadAverage: string
}

export interface Argon2Floor {
  verifies: number
  seconds: number
  perSecond: number
  p50Ms: number
  p99Ms: number
  cpuMsPerVerify: number
  concurrency: number
  threadpoolSize: string
}

export interface RouteResult {
  scenario: Pick<Scenario, 'id' | 'route' | 'label' | 'kind'>
  result: LoadResult
  /** The floor runs measured just before and just after this route (indexes into `floor`, or `argon2` for logins). */
  floorRuns: number[]
  /** Which round of `--rounds` measured it (1 when there is one round). */
  round?: number
}

export interface BenchResults {
  machine: MachineInfo
  settings: {
    args: string
    logLevel: string
    poolSize: number
    connections: number
    duration: number
    warmup: number
    soak: number
    readRate: number
    rounds: number
  }
  /** Floor (b) runs, in the order measured. */
  argon2: Argon2Floor[]
  /** Floor (a) runs, in the order measured (between the service's groups of routes). */
  floor: LoadResult[]
  routes: RouteResult[]
  mixed?: { idle: LoadResult; underLogin: LoadResult; login: LoadResult }
  soak?: { result: LoadResult; startMiB: number; middleMiB: number; endMiB: number }
  startup: { postgres: StartTimes[]; pglite: StartTimes[]; pgliteCreate?: StartTimes }
  loggingCost?: { level: string; result: LoadResult }[]
  pglite: RouteResult[]
  profile?: { scenario: string; summary: ProfileSummary }
  notes: string[]
}

export interface TargetCheck {
  target: string
  measured: string
  required: string
  pass: boolean
}

const fixed = (value: number, digits = 0): string => value.toFixed(digits)
const ratio = (value: number): string => value.toFixed(2)
const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length)
export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  if (sorted.length % 2 === 1) return sorted[middle] ?? Number.NaN
  return sorted.length === 0 ? Number.NaN : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2
}

/** Floor (a) as a route's ratios use it: the mean of the runs just before and after the route. */
export function floorFor(results: BenchResults, route: RouteResult): { rps: number; p99: number } | undefined {
  const runs = route.floorRuns.map((index) => results.floor[index]).filter((run): run is LoadResult => run !== undefined)
  if (runs.length === 0) return undefined
  return { rps: mean(runs.map((run) => run.requestsPerSecond)), p99: mean(runs.map((run) => run.p99Ms)) }
}

/** Floor (b) as a login route's ratio uses it: the mean of the runs just before and after the route. */
export function argon2FloorFor(results: BenchResults, route: RouteResult): number | undefined {
  const runs = route.floorRuns.map((index) => results.argon2[index]).filter((run): run is Argon2Floor => run !== undefined)
  return runs.length === 0 ? undefined : mean(runs.map((run) => run.perSecond))
}

const clean = (result: LoadResult): boolean => result.non2xx === 0 && result.errors === 0
const failures = (result: LoadResult): string => (clean(result) ? '' : ` (${result.non2xx} non-2xx, ${result.errors} errors)`)

/** The ratios of one route in one round, against the floor runs around it. */
interface RouteRatios {
  throughput: number | undefined
  p99: { ratio: number; ms: number; floorMs: number } | undefined
  clean: boolean
  failures: string
}

function ratiosOf(results: BenchResults, route: RouteResult): RouteRatios {
  const { scenario, result } = route
  const base = { clean: clean(result), failures: failures(result) }
  if (scenario.kind === 'login') {
    const argon2 = argon2FloorFor(results, route)
    return { ...base, throughput: argon2 === undefined ? undefined : result.requestsPerSecond / argon2, p99: undefined }
  }
  const floor = floorFor(results, route)
  if (!floor) return { ...base, throughput: undefined, p99: undefined }
  const p99 = scenario.kind === 'read' ? { ratio: result.p99Ms / floor.p99, ms: result.p99Ms, floorMs: floor.p99 } : undefined
  return { ...base, throughput: result.requestsPerSecond / floor.rps, p99 }
}

/** One round's value as it is; several rounds' as their median, with the range. */
function summarised(values: number[]): { value: number; text: string } {
  const value = median(values)
  if (values.length === 1) return { value, text: ratio(value) }
  return { value, text: `${ratio(value)} (median of ${values.length}: ${ratio(Math.min(...values))}–${ratio(Math.max(...values))})` }
}

/**
 * Every target of issue 6 that this run measured, with PASS/FAIL. With several rounds, a route's
 * ratio is the median of its rounds'. A route with failed requests in any round fails.
 */
export function checkTargets(results: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = []
  const byScenario = new Map<string, RouteResult[]>()
  for (const route of results.routes) byScenario.set(route.scenario.id, [...(byScenario.get(route.scenario.id) ?? []), route])
  for (const rounds of byScenario.values()) {
    const scenario = rounds[0]!.scenario
    const name = `route ${scenario.route}`
    const ratios = rounds.map((route) => ratiosOf(results, route))
    const allClean = ratios.every((entry) => entry.clean)
    const failureText = ratios.map((entry) => entry.failures).join('')
    const throughputs = ratios.flatMap((entry) => (entry.throughput === undefined ? [] : [entry.throughput]))
    if (throughputs.length === 0) continue
    const throughput = summarised(throughputs)
    const minimum = scenario.kind === 'login' ? 0.9 : scenario.kind === 'read' ? 0.8 : 0.5
    checks.push({
      target: scenario.kind === 'login' ? `${name} throughput / argon2 floor (b)` : `${name} throughput / floor (a)`,
      measured: throughput.text + failureText,
      required: `≥ ${minimum.toFixed(2)}`,
      pass: throughput.value >= minimum && allClean,
    })
    const p99s = ratios.flatMap((entry) => (entry.p99 ? [entry.p99] : []))
    if (p99s.length > 0) {
      const p99 = summarised(p99s.map((entry) => entry.ratio))
      const measured = p99s.length === 1 ? `${p99.text} (${fixed(p99s[0]!.ms, 1)} / ${fixed(p99s[0]!.floorMs, 1)} ms)` : p99.text
      checks.push({ target: `${name} p99 / floor (a) p99`, measured, required: '< 2.00', pass: p99.value < 2 })
    }
  }
  if (results.mixed) {
    const { idle, underLogin } = results.mixed
    const growth = underLogin.p99Ms / idle.p99Ms
    checks.push({
      target: 'route 9 p99 while route 1 is saturated / idle p99',
      measured: `${ratio(growth)} (${fixed(underLogin.p99Ms, 1)} / ${fixed(idle.p99Ms, 1)} ms)${failures(underLogin)}`,
      required: '< 3.00',
      pass: growth < 3 && clean(underLogin) && clean(idle),
    })
  }
  const steady = [...results.routes.map((route) => route.result), ...(results.soak ? [results.soak.result] : [])]
  if (steady.length > 0) {
    const highest = Math.max(...steady.map((result) => result.rssSteady))
    checks.push({
      target: 'steady RSS under load on PostgreSQL (highest of all runs)',
      measured: `${fixed(highest)} MiB`,
      required: '< 200 MiB',
      pass: highest < 200,
    })
  }
  if (results.soak) {
    const growth = results.soak.endMiB - results.soak.startMiB
    checks.push({
      target: `RSS growth over the ${results.settings.soak} s soak (end − 10 % mark)`,
      measured: `${fixed(growth, 1)} MiB`,
      required: '< 10 MiB',
      pass: growth < 10,
    })
  }
  if (results.startup.pglite.length > 0) {
    const ready = median(results.startup.pglite.map((run) => run.readyMs))
    checks.push({
      target: 'start-up to ready, existing embedded database (median)',
      measured: `${fixed(ready)} ms`,
      required: '< 1500 ms',
      pass: ready < 1500,
    })
  }
  if (results.startup.postgres.length > 0) {
    const ready = median(results.startup.postgres.map((run) => run.readyMs))
    checks.push({ target: 'start-up to ready, PostgreSQL (median)', measured: `${fixed(ready)} ms`, required: '< 500 ms', pass: ready < 500 })
  }
  return checks
}

const row = (cells: (string | number)[]): string => `| ${cells.join(' | ')} |`
/** A table header; the first `left` columns are text, the others numbers (right-aligned). */
const header = (cells: string[], left = 1): string[] => [row(cells), row(cells.map((_, index) => (index < left ? '---' : '---:')))]

const LOAD_COLUMNS = [
  'route',
  'scenario',
  'req/s',
  'p50 ms',
  'p99 ms',
  'max ms',
  'non-2xx',
  'errors',
  'RSS steady MiB',
  'RSS max MiB',
  'CPU server %',
  'CPU PG %',
  'CPU runner %',
  'CPU machine %',
  'server CPU µs/req',
  'PG CPU µs/req',
]

/** CPU time per request in µs, from a CPU share (percent of one core) and the request rate: steadier than the rate when other work competes. */
export const perRequestMicros = (cpuPercent: number, result: LoadResult): number =>
  (cpuPercent / 100 / Math.max(result.requestsPerSecond, 1e-9)) * 1e6

function loadRow(route: string, label: string, result: LoadResult): string {
  // Rows without resource sampling (the login load beside the mixed test) and PostgreSQL figures of
  // the embedded database have nothing to show.
  const sampled = result.rssSamples.length > 0
  const postgres = sampled && result.postgresCpuPercent > 0
  const dash = (show: boolean, value: number) => (show ? fixed(value) : '–')
  return row([
    route,
    label,
    fixed(result.requestsPerSecond),
    fixed(result.p50Ms, 1),
    fixed(result.p99Ms, 1),
    fixed(result.maxMs, 1),
    result.non2xx,
    result.errors,
    dash(sampled, result.rssSteady),
    dash(sampled, result.rssMax),
    dash(sampled, result.serverCpuPercent),
    dash(postgres, result.postgresCpuPercent),
    dash(sampled, result.runnerCpuPercent),
    dash(sampled, result.machineCpuPercent),
    dash(sampled, perRequestMicros(result.serverCpuPercent, result)),
    dash(postgres, perRequestMicros(result.postgresCpuPercent, result)),
  ])
}

function routesSection(title: string, routes: RouteResult[]): string[] {
  if (routes.length === 0) return []
  const lines = [`## ${title}`, '', ...header(LOAD_COLUMNS, 2)]
  const severalRounds = routes.some((route) => (route.round ?? 1) > 1)
  for (const { scenario, result, round } of routes) {
    lines.push(loadRow(scenario.route, severalRounds ? `${scenario.label}, round ${round ?? 1}` : scenario.label, result))
  }
  for (const { scenario, result } of routes.filter((route) => !clean(route.result))) {
    lines.push('', `Route ${scenario.route} status codes: ${JSON.stringify(result.statusCodes)}`)
  }
  return [...lines, '']
}

function floorTable(floor: LoadResult[]): string[] {
  if (floor.length === 0) return []
  return ['', ...header(LOAD_COLUMNS, 2), ...floor.map((result, index) => loadRow('–', `floor (a), run ${index + 1}`, result)), '']
}

function startupSection(results: BenchResults): string[] {
  const { postgres, pglite, pgliteCreate } = results.startup
  if (postgres.length === 0 && pglite.length === 0) return []
  const lines = [
    '## Start-up (spawn → port open → first 200 of /health/ready)',
    '',
    ...header(['database', 'runs', 'listening ms (median)', 'ready ms (median)', 'ready ms (each run)']),
  ]
  const add = (name: string, runs: StartTimes[]) => {
    if (runs.length === 0) return
    lines.push(
      row([
        name,
        runs.length,
        fixed(median(runs.map((run) => run.listeningMs))),
        fixed(median(runs.map((run) => run.readyMs))),
        runs.map((run) => fixed(run.readyMs)).join(', '),
      ]),
    )
  }
  add('PostgreSQL', postgres)
  add('embedded, existing PGLITE_DIR', pglite)
  if (pgliteCreate) add('embedded, new PGLITE_DIR (create, migrate, seed; not a target)', [pgliteCreate])
  return [...lines, '']
}

function profileSection(profile: BenchResults['profile']): string[] {
  if (!profile) return []
  const { summary } = profile
  const busy = summary.busyMs + summary.idleMs
  return [
    `## CPU profile of the service during ${profile.scenario} (--cpu-prof, separate run)`,
    '',
    `Busy ${fixed(summary.busyMs)} ms of ${fixed(busy)} ms sampled on the main thread (${fixed((100 * summary.busyMs) / Math.max(1, busy))} %).`,
    '',
    ...header(['origin', 'self ms', 'self % of busy']),
    ...summary.byOrigin.map((item) => row([item.name, fixed(item.ms), fixed(item.percent, 1)])),
    '',
    ...header(['function', 'self ms', 'self % of busy']),
    ...summary.topFunctions.map((item) => row([`\`${item.name}\``, fixed(item.ms), fixed(item.percent, 1)])),
    '',
  ]
}

/** The whole result as Markdown: machine, settings, tables, targets. */
export function renderMarkdown(results: BenchResults): string {
  const { machine, settings } = results
  const checks = checkTargets(results)
  const lines = [
    '# Benchmark results',
    '',
    'Current figures only, all written by `npm run bench:results`, each table with its command, machine, commit and',
    "date; before/after studies are in the commits they measured. This part is `npm run bench`'s (bench/README.md).",
    '',
    `- Command: \`npm run bench${settings.args ? ` -- ${settings.args}` : ''}\``,
    `- Date: ${machine.date}`,
    `- Commit: ${machine.commit}`,
    `- Machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${fixed(machine.memoryGiB, 1)} GiB memory; Node ${machine.node}; PostgreSQL ${machine.postgres} on the same machine`,
    `- Load generator: autocannon in the runner process (same machine), ${settings.connections} connections, pipelining 1, ${settings.duration} s per route after ${settings.warmup} s of warm-up`,
    ...(settings.rounds > 1
      ? [
          `- Rounds: the routes on PostgreSQL were measured ${settings.rounds} times, each time between runs of their floor; each target takes the median of its rounds' ratios`,
        ]
      : []),
    `- Service: \`${['node', ...productionNodeFlags(), 'dist/server.js'].join(' ')}\` (as \`npm start\`), NODE_ENV=production, LOG_LEVEL=${settings.logLevel} (logs to a file), DATABASE_POOL_SIZE=${settings.poolSize}; the floor server uses the same level and pool size`,
    `- UV_THREADPOOL_SIZE: ${machine.threadpool}`,
    `- Other load on the machine: ${fixed(machine.backgroundBefore)} % CPU before the run, ${machine.backgroundAfter === undefined ? '–' : fixed(machine.backgroundAfter)} % after; load average at start ${machine.loadAverage}`,
    ...results.notes.map((note) => `- Note: ${note}`),
    '',
    // Issue 6's bounds against a bare floor were retired for the own-SQL floor (issue 36): shown as
    // context, without verdicts; the targets held now open the file (bench/RESULTS.md, by hand).
    '## Ratios to the floors (issue 6)',
    '',
    ...header(['ratio', 'measured', "issue 6's bound"], 3),
    ...checks.map((check) => row([check.target, check.measured, check.required])),
    '',
    '## Floors',
    '',
    results.floor.length > 0
      ? `- (a) bare Fastify, same JWT check and one primary-key query through the same pool: ${results.floor.map((run, index) => `run ${index + 1} **${fixed(run.requestsPerSecond)} req/s**, p99 ${fixed(run.p99Ms, 1)} ms`).join('; ')}`
      : '- (a) not measured',
    results.argon2.length > 0
      ? `- (b) raw argon2.verify with ARGON2_OPTIONS, ${results.argon2[0]!.concurrency} in flight, UV_THREADPOOL_SIZE ${results.argon2[0]!.threadpoolSize}: ` +
        results.argon2
          .map(
            (run, index) =>
              `run ${index + 1} **${fixed(run.perSecond, 1)} verifications/s** (p50 ${fixed(run.p50Ms, 1)} ms, p99 ${fixed(run.p99Ms, 1)} ms, ${fixed(run.cpuMsPerVerify, 1)} ms CPU each)`,
          )
          .join('; ')
      : '- (b) not measured',
    "- Each route is compared with the mean of the floor runs measured just before and just after it (the floors are interleaved with the groups of routes, so that a change in the machine's background load between them shows and hurts neither side).",
    ...floorTable(results.floor),
    ...routesSection('Routes on PostgreSQL', results.routes),
  ]
  if (results.mixed) {
    lines.push(
      `## Reads while logins saturate the service`,
      '',
      `Route 9 at a fixed ${settings.readRate} req/s (2 connections), alone and then while route 1 runs with ${settings.connections} connections.`,
      '',
      ...header(LOAD_COLUMNS, 2),
      loadRow('9', 'route 9 alone (idle)', results.mixed.idle),
      loadRow('9', 'route 9 during the login load', results.mixed.underLogin),
      loadRow('1', 'route 1 at the same time', results.mixed.login),
      '',
    )
  }
  if (results.soak) {
    const { soak } = results
    lines.push(
      `## Memory soak: route 4 for ${settings.soak} s`,
      '',
      `RSS at 10 % / 50 % / 100 % of the run: ${fixed(soak.startMiB, 1)} / ${fixed(soak.middleMiB, 1)} / ${fixed(soak.endMiB, 1)} MiB; ` +
        `highest ${fixed(soak.result.rssMax, 1)} MiB; ${fixed(soak.result.requestsPerSecond)} req/s, p99 ${fixed(soak.result.p99Ms, 1)} ms, ` +
        `${soak.result.non2xx} non-2xx, ${soak.result.errors} errors.`,
      '',
    )
  }
  if (results.loggingCost && results.loggingCost.length > 0) {
    lines.push('## Logging cost: route 9 by LOG_LEVEL (fresh service per level)', '', ...header(LOAD_COLUMNS, 2))
    for (const { level, result } of results.loggingCost) lines.push(loadRow('9', `LOG_LEVEL=${level}`, result))
    lines.push('')
  }
  lines.push(
    ...startupSection(results),
    ...routesSection('Read routes on the embedded database (PGlite; no target)', results.pglite),
    ...profileSection(results.profile),
  )
  return lines.join('\n')
}

/** The targets as a console table. */
export function renderTargets(results: BenchResults): string {
  return checkTargets(results)
    .map((check) => `${check.pass ? 'PASS' : 'FAIL'}  ${check.target}: ${check.measured} (required ${check.required})`)
    .join('\n')
}

/**
 * `npm run bench:compare`: which of several variants of the service costs less CPU per request on
 * one scenario. Every variant runs as its own service process, all at once on the same fresh bench
 * database, and they are loaded in turn, short runs rotating through the variants for a number of
 * rounds; each variant's verdict is the median of its rounds. On a shared machine one 10 s run of
 * the same code moved by up to 30 % between runs (run 11 in bench/RESULTS.md's git history); interleaving short
 * runs spreads that drift over every variant alike. Repeat a comparison before trusting a
 * difference of 10 % or less.
 *
 * A variant is `label: token…`, each token a node flag (`--max-semi-space-size=16`), an environment
 * assignment (`LOG_LEVEL=warn`) or `dir=PATH`, another checkout of this repository, built, whose
 * `dist/server.js` to run (to compare commits: `git worktree add`, `npm ci`, `npm run build`), or
 * `floor=own-sql`, the read route's own statement in a bare handler (bench/own-sql-floor.ts).
 * See bench/README.md.
 */
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { databaseName, recreateBenchDatabase } from './database.js'
import { runLoad, type LoadResult } from './load.js'
import { installCleanup, stopAllChildren } from './processes.js'
import { median, perRequestMicros } from './report.js'
import { FORGED_TOKENS, KEYED_WRITES, LOGINS, READS, REFRESH, type LoadSpec, type Scenario } from './scenarios.js'
import { startOwnSqlFloor, startService, type RunningServer } from './servers.js'

interface Variant {
  label: string
  nodeArgs: string[]
  env: NodeJS.ProcessEnv
  root: string | undefined
  /** `floor=own-sql`: bench/own-sql-floor.ts instead of the service (read scenarios only). */
  ownSqlFloor: boolean
}

interface Measured {
  variant: Variant
  scenario: Scenario
  /** The variant's label, with the scenario's id when several are compared. */
  label: string
  server: RunningServer
  spec: LoadSpec
  runs: LoadResult[]
}

const HELP = `npm run bench:compare -- --variant 'label: token…' --variant … [options]
  --variant SPEC       label, a colon, then node flags, VAR=value, dir=PATH or floor=own-sql (repeat; at least two)
  --scenario ID[,ID…]  r4 r6 r7 r9 (reads), r1 r2 (logins), r3 (refresh), r5 r5k r5r r11 r11k r11r (routes 5 and 11
                       without a key, a new key each, one key replayed), x4 x4k (route 4 with forged tokens:
                       without kid, with an unknown kid; all 401) (default r9); several: each
                       variant runs each of them, all interleaved
  --rounds N           runs per variant, interleaved (default 8)
  --duration S         seconds per run (default 3)
  --warmup S           seconds of unrecorded load per variant before the first round (default 3)
  --connections N      concurrent connections (default 10)
  --database-url URL   bench database, dropped and re-created (default postgres://postgres@127.0.0.1:5432/bench)
  --json FILE          also write every run's figures there (bench/results.ts makes its tables from it)`

const say = (text: string): void => void process.stdout.write(`${text}\n`)

function parseVariant(text: string): Variant {
  const colon = text.indexOf(':')
  const label = (colon === -1 ? text : text.slice(0, colon)).trim()
  if (!label) throw new Error(`--variant ${JSON.stringify(text)}: a label comes first`)
  const variant: Variant = { label, nodeArgs: [], env: {}, root: undefined, ownSqlFloor: false }
  for (const token of colon === -1
    ? []
    : text
        .slice(colon + 1)
        .trim()
        .split(/\s+/)
        .filter(Boolean)) {
    const equals = token.indexOf('=')
    if (token.startsWith('--')) variant.nodeArgs.push(token)
    else if (token.startsWith('dir=')) variant.root = token.slice('dir='.length)
    else if (token === 'floor=own-sql') variant.ownSqlFloor = true
    else if (equals > 0) variant.env[token.slice(0, equals)] = token.slice(equals + 1)
    else throw new Error(`--variant ${label}: ${token} is neither a --flag, VAR=value, dir=PATH nor floor=own-sql`)
  }
  return variant
}

function parseOptions(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      variant: { type: 'string', multiple: true, default: [] },
      scenario: { type: 'string', default: 'r9' },
      rounds: { type: 'string', default: '8' },
      duration: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '3' },
      connections: { type: 'string', default: '10' },
      'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/bench' },
      json: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  })
  if (values.help) {
    say(HELP)
    process.exit(0)
  }
  const known = [...READS, ...LOGINS, REFRESH, ...KEYED_WRITES, ...FORGED_TOKENS]
  const scenarios = values.scenario.split(',').map((id) => {
    const scenario = known.find((candidate) => candidate.id === id.trim())
    if (!scenario) throw new Error(`--scenario ${id}: one of ${known.map((s) => s.id).join(' ')}`)
    return scenario
  })
  const variants = values.variant.map(parseVariant)
  if (variants.length * scenarios.length < 2) throw new Error(`at least two --variant, each 'label: token…', or two scenarios\n${HELP}`)
  return {
    variants,
    scenarios,
    rounds: Number(values.rounds),
    duration: Number(values.duration),
    warmup: Number(values.warmup),
    connections: Number(values.connections),
    databaseUrl: values['database-url'],
    json: values.json,
  }
}

type Options = ReturnType<typeof parseOptions>

async function startVariants(options: Options): Promise<Measured[]> {
  const database = { kind: 'postgres' as const, url: options.databaseUrl }
  const servers: RunningServer[] = []
  for (const variant of options.variants) {
    servers.push(
      variant.ownSqlFloor
        ? await startOwnSqlFloor(options.databaseUrl, 10, variant.nodeArgs, variant.root)
        : await startService({
            database,
            logLevel: 'info',
            poolSize: 10,
            nodeArgs: variant.nodeArgs,
            env: variant.env,
            ...(variant.root ? { root: variant.root } : {}),
          }),
    )
  }
  // The floor has no login route: its requests carry tokens from a service variant (same key).
  const serviceIndex = options.variants.findIndex((variant) => !variant.ownSqlFloor)
  if (serviceIndex === -1) throw new Error('--variant: at least one variant must be the service')
  const measured: Measured[] = []
  for (const [index, variant] of options.variants.entries()) {
    const tokenSource = variant.ownSqlFloor ? servers[serviceIndex]! : servers[index]!
    for (const scenario of options.scenarios) {
      const phase = await scenario.prepare({
        baseUrl: tokenSource.baseUrl,
        databaseUrl: options.databaseUrl,
        requestBudget: refreshBudget(options, scenario),
      })
      const label = options.scenarios.length > 1 ? `${variant.label}/${scenario.id}` : variant.label
      measured.push({ variant, scenario, label, server: servers[index]!, spec: phase(), runs: [] })
    }
  }
  return measured
}

/**
 * Refresh tokens each variant may spend over the warm-up and all its rounds (r3 never replays one),
 * at a rate well above what one instance reaches here; 0 for the other scenarios.
 */
function refreshBudget(options: Options, scenario: Scenario): number {
  return scenario.kind === 'refresh' ? (options.warmup + options.rounds * options.duration) * 4_000 : 0
}

const cpuMicrosPerRequest = (run: LoadResult): number => perRequestMicros(run.serverCpuPercent, run)

function report(measured: Measured[]): void {
  const baseline = median(measured[0]!.runs.map(cpuMicrosPerRequest))
  for (const entry of measured) {
    const { label, runs } = entry
    const cpu = runs.map(cpuMicrosPerRequest)
    const mid = median(cpu)
    const versus = entry === measured[0] ? 'baseline' : `${((mid / baseline - 1) * 100).toFixed(1)} % against ${measured[0]!.label}`
    say(
      `${label.padEnd(16)} ${mid.toFixed(0).padStart(6)} µs/req (${versus}; runs ${cpu.map((value) => value.toFixed(0)).join(' ')})  ` +
        `${median(runs.map((run) => run.requestsPerSecond)).toFixed(0)} req/s (runs ${runs.map((run) => run.requestsPerSecond.toFixed(0)).join(' ')})  ` +
        `p50 ${median(runs.map((run) => run.p50Ms)).toFixed(2)} ms  non-2xx ${runs.reduce((sum, run) => sum + run.non2xx, 0)}  RSS steady ≤ ${Math.max(...runs.map((run) => run.rssSteady)).toFixed(0)} MiB`,
    )
  }
}

/** One variant on one scenario, every round in order: what bench/results.ts tabulates. */
export interface ComparedRuns {
  variant: string
  scenario: string
  ownSqlFloor: boolean
  cpuMicrosPerRequest: number[]
  requestsPerSecond: number[]
  p50Ms: number[]
  failed: number
}

const toJson = ({ variant, scenario, runs }: Measured): ComparedRuns => ({
  variant: variant.label,
  scenario: scenario.id,
  ownSqlFloor: variant.ownSqlFloor,
  cpuMicrosPerRequest: runs.map(cpuMicrosPerRequest),
  requestsPerSecond: runs.map((run) => run.requestsPerSecond),
  p50Ms: runs.map((run) => run.p50Ms),
  failed: runs.reduce((sum, run) => sum + run.non2xx + run.errors, 0),
})

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  installCleanup()
  try {
    say(`bench database ${options.databaseUrl}: re-creating, migrating, seeding`)
    await recreateBenchDatabase(options.databaseUrl)
    const measured = await startVariants(options)
    const database = databaseName(options.databaseUrl)
    const load = (entry: Measured, seconds: number) =>
      runLoad({
        baseUrl: entry.server.baseUrl,
        spec: entry.spec,
        connections: options.connections,
        durationSeconds: seconds,
        serverPid: entry.server.pid,
        database,
      })
    for (const entry of measured) await load(entry, options.warmup)
    for (const scenario of options.scenarios) say(`${scenario.id}: ${scenario.label}`)
    say(`${options.rounds} rounds of ${options.duration} s per variant and scenario`)
    for (let round = 0; round < options.rounds; round += 1) {
      // Each round starts one variant later, so that no variant always follows the same one.
      for (let step = 0; step < measured.length; step += 1) {
        const entry = measured[(round + step) % measured.length]!
        entry.runs.push(await load(entry, options.duration))
      }
    }
    report(measured)
    if (options.json) writeFileSync(options.json, JSON.stringify(measured.map(toJson), null, 1))
  } finally {
    await stopAllChildren()
  }
}

await main()

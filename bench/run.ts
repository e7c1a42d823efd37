/**
 * `npm run bench`: builds the service (prebench), measures the two floors and every route on the
 * local PostgreSQL, the memory soak, logging cost and start-up, then writes bench/RESULTS.md.
 * See bench/README.md. Every child process is stopped at the end, on errors and on Ctrl-C.
 */
import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { databaseName, postgresVersion, recreateBenchDatabase } from './database.js'
import { runLoad, type LoadResult } from './load.js'
import { parseOptions, type BenchOptions } from './options.js'
import { installCleanup, machineBusyPercent, runNodeForOutput, stopAllChildren, stopChild } from './processes.js'
import { summariseProfile } from './profile.js'
import { renderMarkdown, renderTargets, type Argon2Floor, type BenchResults, type MachineInfo, type RouteResult } from './report.js'
import { FLOOR, LOGINS, READS, REFRESH, WEBHOOK, loginSpec, type Scenario } from './scenarios.js'
import { REPO_ROOT, startFloorServer, startService, type RunningServer, type ServiceOptions } from './servers.js'

/** Rate of the read load in the mixed test: far below saturation, so its latency shows waiting, not queueing. */
const MIXED_READ_RATE = 100
/**
 * Refresh tokens made per second of load: above any rate these machines reach, so the pool never
 * runs dry (route 3 ran out at 4,000 in run 14, after reaching 4,941 req/s).
 */
const REFRESH_TOKENS_PER_SECOND = 8_000

const say = (text: string): void => void process.stdout.write(`${text}\n`)

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim()
  } catch {
    return ''
  }
}

async function machineInfo(databaseUrl: string): Promise<MachineInfo> {
  const dirty = git(['status', '--porcelain']).split('\n').filter(Boolean).length
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown'
  return {
    date: new Date().toISOString(),
    commit: `${git(['rev-parse', 'HEAD']) || 'unknown'}${dirty ? ` with uncommitted changes in the working tree (${dirty} paths)` : ''}`,
    cpus: availableParallelism(),
    cpuModel,
    memoryGiB: totalmem() / 2 ** 30,
    node: process.version,
    postgres: await postgresVersion(databaseUrl),
    threadpool: process.env.UV_THREADPOOL_SIZE ?? '4 (unset, libuv default)',
    backgroundBefore: await machineBusyPercent(2_000),
    backgroundAfter: undefined,
    loadAverage: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  }
}

/** Warn and error lines (pino levels 40+) near the end of a server's log, for runs that got failures. */
function logProblems(file: string, limit = 5): string[] {
  try {
    const size = statSync(file).size
    const tail = Buffer.alloc(Math.min(size, 256 * 1024))
    const fd = openSync(file, 'r')
    try {
      readSync(fd, tail, 0, tail.length, size - tail.length)
    } finally {
      closeSync(fd)
    }
    return tail
      .toString('utf8')
      .split('\n')
      .filter((line) => /"level":(4|5|6)0/.test(line))
      .slice(-limit)
  } catch {
    return []
  }
}

class Bench {
  readonly results: BenchResults
  private logCount = 0
  /** Whose PostgreSQL backends count as the service's database work. */
  private readonly database: string

  constructor(
    readonly options: BenchOptions,
    machine: MachineInfo,
    private readonly workDir: string,
  ) {
    this.database = databaseName(options.databaseUrl)
    this.results = {
      machine,
      settings: {
        args: process.argv.slice(2).join(' '),
        logLevel: options.logLevel,
        poolSize: options.poolSize,
        connections: options.connections,
        duration: options.duration,
        warmup: options.warmup,
        soak: options.soak,
        readRate: MIXED_READ_RATE,
        rounds: options.rounds,
      },
      argon2: [],
      floor: [],
      routes: [],
      startup: { postgres: [], pglite: [] },
      pglite: [],
      notes: [...options.notes],
    }
  }

  selected(id: string): boolean {
    return this.options.only.length === 0 || this.options.only.includes(id)
  }

  logFile(name: string): string {
    this.logCount += 1
    return join(this.workDir, `${String(this.logCount).padStart(2, '0')}-${name}.log`)
  }

  serviceOptions(overrides: Partial<ServiceOptions> = {}): ServiceOptions {
    return {
      database: { kind: 'postgres', url: this.options.databaseUrl },
      logLevel: this.options.logLevel,
      poolSize: this.options.poolSize,
      logFile: this.logFile('service'),
      ...overrides,
    }
  }

  /** Warm-up, then the measured run with the server's RSS and CPU sampled. */
  async measure(server: RunningServer, scenario: Scenario, logFile?: string): Promise<LoadResult> {
    const budget = Math.ceil(REFRESH_TOKENS_PER_SECOND * (this.options.duration + this.options.warmup))
    const load = await scenario.prepare({ baseUrl: server.baseUrl, databaseUrl: this.options.databaseUrl, requestBudget: budget })
    const common = { baseUrl: server.baseUrl, connections: this.options.connections }
    if (this.options.warmup > 0) await runLoad({ ...common, spec: load(), durationSeconds: this.options.warmup })
    const result = await runLoad({ ...common, spec: load(), durationSeconds: this.options.duration, serverPid: server.pid, database: this.database })
    say(
      `  ${scenario.id.padEnd(6)} ${scenario.label.padEnd(42)} ${result.requestsPerSecond.toFixed(0).padStart(6)} req/s  ` +
        `p50 ${result.p50Ms.toFixed(1)} ms  p99 ${result.p99Ms.toFixed(1)} ms  non-2xx ${result.non2xx}  errors ${result.errors}  ` +
        `RSS ${result.rssSteady.toFixed(0)} MiB  CPU server ${result.serverCpuPercent.toFixed(0)} % PG ${result.postgresCpuPercent.toFixed(0)} % ` +
        `runner ${result.runnerCpuPercent.toFixed(0)} %  server ${((result.serverCpuPercent / 100 / Math.max(result.requestsPerSecond, 1e-9)) * 1e6).toFixed(0)} µs/req`,
    )
    if (result.seconds < this.options.duration * 0.95) {
      this.results.notes.push(`${scenario.id} ended after ${result.seconds} s of ${this.options.duration} s (its request pool ran out)`)
    }
    if ((result.non2xx > 0 || result.errors > 0) && logFile) {
      say(`    status codes ${JSON.stringify(result.statusCodes)}; last problems logged:`)
      for (const line of logProblems(logFile)) say(`    ${line.slice(0, 400)}`)
    }
    await sleep(1_000)
    return result
  }

  async argon2Floor(): Promise<Argon2Floor> {
    const output = await runNodeForOutput(
      {
        script: 'bench/argon2-floor.ts',
        nodeArgs: ['--import', 'tsx'],
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH,
          ...(process.env.UV_THREADPOOL_SIZE ? { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE } : {}),
          CONCURRENCY: String(this.options.connections),
          DURATION: String(this.options.duration),
          WARMUP: String(this.options.warmup),
        },
      },
      (this.options.duration + this.options.warmup + 60) * 1000,
    )
    const floor = JSON.parse(output) as Argon2Floor
    say(
      `  argon2 ${floor.perSecond.toFixed(1)} verifications/s  p50 ${floor.p50Ms.toFixed(1)} ms  p99 ${floor.p99Ms.toFixed(1)} ms  ${floor.cpuMsPerVerify.toFixed(1)} ms CPU each`,
    )
    return floor
  }

  /**
   * The service's routes in groups, each group between two runs of its floor: floor (a), reads,
   * floor (a), argon2 floor, logins, argon2 floor, refresh and webhook, floor (a). The floor server
   * and the service both run throughout; only the one being loaded does any work.
   */
  async routesOnPostgres(): Promise<void> {
    const floorLog = this.logFile('floor')
    const floor = await startFloorServer({
      databaseUrl: this.options.databaseUrl,
      logLevel: this.options.logLevel,
      poolSize: this.options.poolSize,
      logFile: floorLog,
    })
    const options = this.serviceOptions()
    const service = await startService(options)
    const groups: { scenarios: Scenario[]; floor: 'a' | 'b' }[] = [
      { scenarios: READS, floor: 'a' },
      { scenarios: LOGINS, floor: 'b' },
      { scenarios: [REFRESH, WEBHOOK], floor: 'a' },
    ]
    /** Measures a floor; its index in the results. */
    const measureFloor = async (kind: 'a' | 'b'): Promise<number> =>
      kind === 'a' ? this.results.floor.push(await this.measure(floor, FLOOR, floorLog)) - 1 : this.results.argon2.push(await this.argon2Floor()) - 1
    // A floor (a) run with nothing measured after it: it closes one group and opens the next.
    let freshFloor: number | undefined
    try {
      // Discarded: a freshly started floor server measured 20-30 % below its later runs (its code
      // not yet optimised by V8), which made the first group of routes look better than they are.
      if ([...READS, REFRESH, WEBHOOK].some((scenario) => this.selected(scenario.id))) await this.measure(floor, FLOOR, floorLog)
      for (let round = 1; round <= this.options.rounds; round += 1) {
        if (this.options.rounds > 1) say(`round ${round} of ${this.options.rounds}`)
        for (const group of groups) {
          const scenarios = group.scenarios.filter((scenario) => this.selected(scenario.id))
          if (scenarios.length === 0) continue
          const opening = group.floor === 'a' && freshFloor !== undefined ? freshFloor : await measureFloor(group.floor)
          const routes: RouteResult[] = []
          for (const scenario of scenarios) {
            routes.push({ scenario, result: await this.measure(service, scenario, options.logFile), floorRuns: [], round })
          }
          const closing = await measureFloor(group.floor)
          freshFloor = group.floor === 'a' ? closing : undefined
          for (const route of routes) route.floorRuns = [opening, closing]
          this.results.routes.push(...routes)
        }
      }
      if (this.selected('mixed')) await this.mixed(service)
      if (this.selected('soak') && this.options.soak > 0) await this.soak(service)
    } finally {
      await stopChild(service.child)
      await stopChild(floor.child)
    }
  }

  /** Route 9 at a fixed low rate, alone and then while route 1 saturates the service. */
  async mixed(service: RunningServer): Promise<void> {
    const read = READS.find((scenario) => scenario.id === 'r9')!
    const readLoad = await read.prepare({ baseUrl: service.baseUrl, databaseUrl: this.options.databaseUrl, requestBudget: 0 })
    const readRun = (durationSeconds: number, serverPid?: number) =>
      runLoad({
        baseUrl: service.baseUrl,
        spec: readLoad(),
        connections: 2,
        overallRate: MIXED_READ_RATE,
        durationSeconds,
        ...(serverPid ? { serverPid, database: this.database } : {}),
      })
    await readRun(this.options.warmup || 1)
    const idle = await readRun(this.options.duration, service.pid)
    await sleep(1_000)
    const [underLogin, login] = await Promise.all([
      readRun(this.options.duration, service.pid),
      runLoad({
        baseUrl: service.baseUrl,
        spec: loginSpec('/api/auth/v1/token'),
        connections: this.options.connections,
        durationSeconds: this.options.duration,
      }),
    ])
    this.results.mixed = { idle, underLogin, login }
    say(
      `  mixed  route 9 p99 idle ${idle.p99Ms.toFixed(1)} ms, during logins ${underLogin.p99Ms.toFixed(1)} ms (logins ${login.requestsPerSecond.toFixed(1)}/s)`,
    )
    await sleep(1_000)
  }

  /** Route 4 for the soak duration; RSS read at 10 %, 50 % and 100 % of it. */
  async soak(service: RunningServer): Promise<void> {
    const route = READS.find((scenario) => scenario.id === 'r4')!
    const load = await route.prepare({ baseUrl: service.baseUrl, databaseUrl: this.options.databaseUrl, requestBudget: 0 })
    const result = await runLoad({
      baseUrl: service.baseUrl,
      spec: load(),
      connections: this.options.connections,
      durationSeconds: this.options.soak,
      serverPid: service.pid,
      database: this.database,
    })
    const at = (fraction: number) =>
      result.rssSamples[Math.min(result.rssSamples.length - 1, Math.floor(fraction * (result.rssSamples.length - 1)))] ?? 0
    this.results.soak = { result, startMiB: at(0.1), middleMiB: at(0.5), endMiB: at(1) }
    say(`  soak   ${result.requestsPerSecond.toFixed(0)} req/s; RSS ${at(0.1).toFixed(1)} → ${at(0.5).toFixed(1)} → ${at(1).toFixed(1)} MiB`)
  }

  /** Route 9 on a fresh service per log level: what the request log lines cost. */
  async loggingCost(): Promise<void> {
    const read = READS.find((scenario) => scenario.id === 'r9')!
    this.results.loggingCost = []
    for (const level of ['info', 'warn']) {
      const options = this.serviceOptions({ logLevel: level })
      const service = await startService(options)
      try {
        const result = await this.measure(service, read, options.logFile)
        this.results.loggingCost.push({ level, result })
      } finally {
        await stopChild(service.child)
      }
    }
  }

  async startupOnPostgres(): Promise<void> {
    for (let run = 0; run < this.options.startupRuns; run += 1) {
      const service = await startService(this.serviceOptions())
      this.results.startup.postgres.push(service.startTimes)
      await stopChild(service.child)
    }
    say(`  startup PostgreSQL ready: ${this.results.startup.postgres.map((run) => run.readyMs.toFixed(0)).join(', ')} ms`)
  }

  /** The embedded database of this run; its first start creates, migrates and seeds it. */
  private embeddedDatabase: { kind: 'pglite'; dir: string } | undefined

  async embeddedDatabaseCreated(): Promise<{ kind: 'pglite'; dir: string }> {
    if (this.embeddedDatabase) return this.embeddedDatabase
    const database = { kind: 'pglite' as const, dir: join(this.workDir, 'pglite') }
    const first = await startService(this.serviceOptions({ database }))
    this.results.startup.pgliteCreate = first.startTimes
    await stopChild(first.child)
    this.embeddedDatabase = database
    return database
  }

  async startupEmbedded(): Promise<void> {
    const database = await this.embeddedDatabaseCreated()
    for (let run = 0; run < this.options.startupRuns; run += 1) {
      const service = await startService(this.serviceOptions({ database }))
      this.results.startup.pglite.push(service.startTimes)
      await stopChild(service.child)
    }
    say(`  startup embedded ready: ${this.results.startup.pglite.map((run) => run.readyMs.toFixed(0)).join(', ')} ms`)
  }

  async readsEmbedded(): Promise<void> {
    const database = await this.embeddedDatabaseCreated()
    const options = this.serviceOptions({ database })
    const service = await startService(options)
    try {
      for (const scenario of READS) {
        if (this.selected(scenario.id))
          this.results.pglite.push({ scenario, result: await this.measure(service, scenario, options.logFile), floorRuns: [] })
      }
    } finally {
      await stopChild(service.child)
    }
  }

  /** A separate service run with --cpu-prof during one scenario, summarised by self time. */
  async profile(id: string): Promise<void> {
    const scenario = [...READS, ...LOGINS, REFRESH, WEBHOOK].find((candidate) => candidate.id === id)
    if (!scenario) throw new Error(`--profile: unknown scenario ${id}`)
    const dir = join(this.workDir, 'cpu-profile')
    const options = this.serviceOptions({ nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] })
    const service = await startService(options)
    try {
      await this.measure(service, scenario, options.logFile)
    } finally {
      await stopChild(service.child, 15_000)
    }
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))
    if (!file) throw new Error('--profile: the service wrote no profile')
    this.results.profile = { scenario: `${scenario.id} (${scenario.label})`, summary: summariseProfile(join(dir, file)) }
    if (this.options.keepLogs) say(`  profile: ${join(dir, file)}`)
  }

  async run(): Promise<void> {
    say('service on PostgreSQL, between runs of the floors')
    await this.routesOnPostgres()
    if (this.options.loggingCost && this.selected('r9')) {
      say('logging cost')
      await this.loggingCost()
    }
    if (this.selected('startup')) {
      say('start-up')
      await this.startupOnPostgres()
      await this.startupEmbedded()
    }
    if (this.options.pglite) {
      say('read routes on the embedded database')
      await this.readsEmbedded()
    }
    if (this.options.profile) {
      say(`profile of ${this.options.profile}`)
      await this.profile(this.options.profile)
    }
  }
}

/**
 * The production-volume section (bench/volume-run.ts) of an existing results file and what follows
 * it (the tables of bench/pooler.ts and bench:compare), kept when the rest is rewritten.
 */
function volumeSectionOf(file: string): string {
  try {
    const text = readFileSync(file, 'utf8')
    const start = text.indexOf('<!-- volume:start -->')
    return start >= 0 ? `\n${text.slice(start).trimEnd()}\n` : ''
  } catch {
    return ''
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--volume')) {
    const { runVolumeBench } = await import('./volume-run.js')
    return runVolumeBench(process.argv.slice(2))
  }
  const options = parseOptions(process.argv.slice(2))
  const workDir = mkdtempSync(join(tmpdir(), 'receivables-bench-'))
  installCleanup(() => {
    if (options.keepLogs) say(`logs kept in ${workDir}`)
    else rmSync(workDir, { recursive: true, force: true })
  })
  try {
    say(`bench database ${options.databaseUrl}: re-creating, migrating, seeding`)
    await recreateBenchDatabase(options.databaseUrl)
    const machine = await machineInfo(options.databaseUrl)
    const bench = new Bench(options, machine, workDir)
    await bench.run()
    bench.results.machine.backgroundAfter = await machineBusyPercent(2_000)
    writeFileSync(resolve(REPO_ROOT, options.out), `${renderMarkdown(bench.results)}\n${volumeSectionOf(resolve(REPO_ROOT, options.out))}`)
    say(`\n${renderTargets(bench.results)}\n\nwritten to ${options.out}`)
  } finally {
    await stopAllChildren()
  }
}

await main()

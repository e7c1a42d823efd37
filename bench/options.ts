import { parseArgs } from 'node:util'

export interface BenchOptions {
  databaseUrl: string
  /** Seconds of measurement per route, and of warm-up before each. */
  duration: number
  warmup: number
  /** Seconds of the memory soak on one read route; 0 skips it. */
  soak: number
  connections: number
  /** Of the service and of the floor server. */
  logLevel: string
  poolSize: number
  /** Also load the read routes on the embedded database. */
  pglite: boolean
  /** Scenario ids to run (r1 … r12); empty means all. */
  only: string[]
  /** Profile the service with --cpu-prof while it serves this scenario, and summarise. */
  profile: string | undefined
  /** Compare LOG_LEVEL info and warn on route 9. */
  loggingCost: boolean
  startupRuns: number
  /** Times the groups of routes on PostgreSQL are measured; the targets take the median ratio. */
  rounds: number
  out: string
  keepLogs: boolean
  /** Free text for RESULTS.md, e.g. what else was running on the machine. */
  notes: string[]
}

const HELP = `npm run bench -- [options]
  --database-url URL   bench database, dropped and re-created (default postgres://postgres@127.0.0.1:5432/bench)
  --duration S         seconds of load per route (default 10)
  --warmup S           seconds of warm-up before each measurement (default 2)
  --soak S             seconds of the memory soak on route 4, 0 to skip (default 60)
  --connections N      concurrent connections of each load (default 10)
  --log-level L        LOG_LEVEL of the service and the floor server (default info, the production default)
  --pool-size N        DATABASE_POOL_SIZE of the service and the floor server (default 10)
  --pglite             also load the read routes on the embedded database
  --only r4,r9         run only these scenarios (r1 r2 r3 r4 r6 r7 r9 r12 mixed soak startup)
  --profile r9         run the service with --cpu-prof during that scenario and print the top functions
  --no-logging-cost    skip the info-versus-warn comparison on route 9
  --startup-runs N     start-ups measured per database (default 3)
  --rounds N           measure the routes on PostgreSQL N times, each with its floors; targets use the median (default 1)
  --out FILE           where the results go (default bench/RESULTS.md)
  --keep-logs          keep the servers' logs (their path is printed)
  --note TEXT          a note for RESULTS.md, e.g. what else ran on the machine (repeatable)`

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/bench' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      soak: { type: 'string', default: '60' },
      connections: { type: 'string', default: '10' },
      'log-level': { type: 'string', default: 'info' },
      'pool-size': { type: 'string', default: '10' },
      pglite: { type: 'boolean', default: false },
      only: { type: 'string', default: '' },
      profile: { type: 'string' },
      'no-logging-cost': { type: 'boolean', default: false },
      'startup-runs': { type: 'string', default: '3' },
      rounds: { type: 'string', default: '1' },
      out: { type: 'string', default: 'bench/RESULTS.md' },
      'keep-logs': { type: 'boolean', default: false },
      note: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(`${HELP}\n`)
    process.exit(0)
  }
  const number = (name: string, text: string, min: number, max: number): number => {
    const value = Number(text)
    if (!Number.isFinite(value) || value < min || value > max) throw new Error(`--${name}: expected a number from ${min} to ${max}`)
    return value
  }
  const url = new URL(values['database-url'])
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) throw new Error('--database-url: loopback addresses only')
  return {
    databaseUrl: values['database-url'],
    duration: number('duration', values.duration, 1, 600),
    warmup: number('warmup', values.warmup, 0, 60),
    soak: number('soak', values.soak, 0, 3_600),
    connections: number('connections', values.connections, 1, 1_000),
    logLevel: values['log-level'],
    poolSize: number('pool-size', values['pool-size'], 1, 200),
    pglite: values.pglite,
    only: values.only
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean),
    profile: values.profile,
    loggingCost: !values['no-logging-cost'],
    startupRuns: number('startup-runs', values['startup-runs'], 1, 20),
    rounds: number('rounds', values.rounds, 1, 10),
    out: values.out,
    keepLogs: values['keep-logs'],
    notes: values.note,
  }
}

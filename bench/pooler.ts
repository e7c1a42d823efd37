/**
 * Route 9 behind PgBouncer (transaction mode) against the same service connected directly, in short
 * alternating runs: `npm run build && npx tsx bench/pooler.ts [--duration 8] [--rounds 2]
 * [--pgbouncer <binary>]`. Prints a Markdown table for bench/RESULTS.md. Needs the local PostgreSQL
 * and a pgbouncer: Debian's (1.18) by default, else `--pgbouncer` (or PGBOUNCER_BINARY); when that
 * one is ≥ 1.21, a fourth setup runs the service's named prepared statements through it
 * (`max_prepared_statements`, DATABASE_PREPARED_STATEMENTS=true).
 */
import { execFileSync } from 'node:child_process'
import { parseArgs } from 'node:util'
import { keepsPreparedStatements, pgbouncerBinary, pgbouncerVersion, startPgBouncer } from '../test/topology/pgbouncer.js'
import { recreateBenchDatabase } from './database.js'
import { runLoad, type LoadResult } from './load.js'
import { installCleanup, stopChild } from './processes.js'
import { READS } from './scenarios.js'
import { startService } from './servers.js'

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/bench_pooler' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10' },
    'pool-size': { type: 'string', default: '10' },
    only: { type: 'string', default: '' },
    pgbouncer: { type: 'string', default: pgbouncerBinary() ?? '/usr/sbin/pgbouncer' },
    'max-prepared-statements': { type: 'string', default: '200' },
  },
})
const binary = values.pgbouncer
const version = pgbouncerVersion(binary)
if (!version) throw new Error(`${binary} --version failed: give a PgBouncer binary with --pgbouncer`)
const keepsNames = keepsPreparedStatements(version)
const pgbouncerLabel = `PgBouncer ${version.join('.')}`
const databaseUrl = values['database-url']
const duration = Number(values.duration)
const warmup = Number(values.warmup)
const rounds = Number(values.rounds)
const connections = Number(values.connections)
const poolSize = Number(values['pool-size'])

interface Setup {
  id: string
  label: string
  url: () => string
  env: Record<string, string>
}

installCleanup()
process.stderr.write(`re-creating ${databaseUrl}…\n`)
await recreateBenchDatabase(databaseUrl)
const database = new URL(databaseUrl).pathname.slice(1)
// The role's settings in this database travel to every server connection PgBouncer opens: the
// documented way to give the service plan_cache_mode and statement_timeout behind a pooler.
execFileSync('psql', [
  new URL('/postgres', databaseUrl).toString(),
  '-qc',
  `ALTER ROLE CURRENT_USER IN DATABASE "${database}" SET plan_cache_mode = force_generic_plan`,
  '-c',
  `ALTER ROLE CURRENT_USER IN DATABASE "${database}" SET statement_timeout = '5s'`,
])
const bouncer = await startPgBouncer(
  databaseUrl,
  {
    default_pool_size: String(poolSize),
    // ≥ 1.21: PgBouncer keeps each client's named statements and prepares them on the server connection it lends.
    ...(keepsNames ? { max_prepared_statements: values['max-prepared-statements'] } : {}),
  },
  binary,
)
const allSetups: Setup[] = [
  { id: 'direct', label: 'direct, prepared statements (default)', url: () => databaseUrl, env: {} },
  {
    id: 'pgbouncer',
    label: `${pgbouncerLabel} transaction mode, DATABASE_PREPARED_STATEMENTS=false`,
    url: () => bouncer.url(database),
    env: { DATABASE_PREPARED_STATEMENTS: 'false' },
  },
  {
    id: 'direct-unprepared',
    label: 'direct, DATABASE_PREPARED_STATEMENTS=false',
    url: () => databaseUrl,
    env: { DATABASE_PREPARED_STATEMENTS: 'false' },
  },
  ...(keepsNames
    ? [
        {
          id: 'pgbouncer-prepared',
          label: `${pgbouncerLabel} transaction mode, max_prepared_statements=${values['max-prepared-statements']}, DATABASE_PREPARED_STATEMENTS=true`,
          url: () => bouncer.url(database),
          env: { DATABASE_PREPARED_STATEMENTS: 'true' },
        },
      ]
    : []),
]
const setups = allSetups.filter((setup) => !values.only || values.only.split(',').includes(setup.id))

const scenario = READS.find((read) => read.id === 'r9')!
const results = new Map<string, LoadResult[]>()
try {
  for (let round = 1; round <= rounds; round++) {
    for (const setup of setups) {
      const service = await startService({
        database: { kind: 'postgres', url: setup.url() },
        logLevel: 'info',
        poolSize,
        env: setup.env,
      })
      try {
        const spec = (await scenario.prepare({ baseUrl: service.baseUrl, databaseUrl, requestBudget: 0 }))()
        await runLoad({ baseUrl: service.baseUrl, spec, connections, durationSeconds: warmup })
        const result = await runLoad({ baseUrl: service.baseUrl, spec, connections, durationSeconds: duration, serverPid: service.pid, database })
        process.stderr.write(
          `round ${round} ${setup.id}: ${Math.round(result.requestsPerSecond)} req/s, p99 ${result.p99Ms.toFixed(1)} ms, non-2xx ${result.non2xx}\n`,
        )
        results.set(setup.id, [...(results.get(setup.id) ?? []), result])
        if (setup.id === 'pgbouncer-prepared') {
          // Evidence that the names went through: PgBouncer prepared each on the server far less often than it bound them.
          const { rows } = await bouncer.admin('SHOW STATS')
          const row = (rows as Record<string, string>[]).find((stats) => stats.database === database) ?? {}
          process.stderr.write(
            `  PgBouncer so far: ${row.total_client_parse_count} client Parse, ${row.total_server_parse_count} server Parse, ${row.total_bind_count} Bind\n`,
          )
        }
      } finally {
        await stopChild(service.child)
      }
    }
  }
} finally {
  await bouncer.stop()
}

const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] ?? 0
const directRuns = results.get('direct') ?? []
// Each round's ratio to the direct run of the same round: the machine's background load moves both alike.
const rows = setups.map((setup) => {
  const runs = results.get(setup.id) ?? []
  const ratios = runs.map((result, round) => result.requestsPerSecond / (directRuns[round]?.requestsPerSecond || Number.NaN))
  const cell = (pick: (result: LoadResult) => number, digits = 0) => runs.map((result) => pick(result).toFixed(digits)).join(' / ')
  const pgMicrosPerRequest = (result: LoadResult) => ((result.postgresCpuPercent / 100) * 1e6) / (result.requestsPerSecond || 1)
  return `| ${setup.label} | ${cell((result) => result.requestsPerSecond)} | ${ratios.map((ratio) => ratio.toFixed(2)).join(' / ')} (median ${median(ratios).toFixed(2)}) | ${cell((result) => result.p99Ms, 1)} | ${cell((result) => result.non2xx + result.errors)} | ${cell(pgMicrosPerRequest)} |`
})
process.stdout.write(
  [
    `Route 9, ${connections} connections, DATABASE_POOL_SIZE=${poolSize} (PgBouncer default_pool_size the same), ${rounds} rounds of ${duration} s after ${warmup} s warm-up, alternating:`,
    '',
    '| setup | req/s (each round) | × direct, same round | p99 ms | failed | PostgreSQL CPU µs/request |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
  ].join('\n'),
)

/**
 * Routes 4, 7 and 9 with their reads on the primary, then on a streaming replica
 * (DATABASE_REPLICA_URLS), in short alternating runs: `npm run build && npx tsx bench/replicas.ts
 * [--duration 8] [--rounds 2]`. A primary and one replica of its own on this machine
 * (test/topology/streaming.ts: initdb, pg_basebackup), run as postgres; prints a Markdown table for
 * bench/RESULTS.md with each node's CPU per read (every process of the node: backends, WAL sender,
 * the replica's startup process).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { startStreamingCluster, streamingUnavailable } from '../test/topology/streaming.js'
import { recreateBenchDatabase } from './database.js'
import { runLoad, type LoadResult } from './load.js'
import { cpuSeconds, installCleanup, stopChild } from './processes.js'
import { READS } from './scenarios.js'
import { startService } from './servers.js'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10' },
    'pool-size': { type: 'string', default: '10' },
    only: { type: 'string', default: 'r4,r7,r9' },
  },
})
const unavailable = streamingUnavailable()
if (unavailable) throw new Error(unavailable)
const duration = Number(values.duration)
const warmup = Number(values.warmup)
const rounds = Number(values.rounds)
const connections = Number(values.connections)
const poolSize = Number(values['pool-size'])
const DATABASE = 'bench_replicas'

/** CPU seconds so far of every process of node `name` (its cluster_name titles them `postgres: <name>: …`). */
function nodeCpu(name: string): number {
  let total = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').startsWith(`postgres: ${name}: `)) continue
      total += cpuSeconds(Number(entry)) ?? 0
    } catch {
      // ended meanwhile
    }
  }
  return total
}

installCleanup()
process.stderr.write('starting a primary and a replica…\n')
const cluster = await startStreamingCluster(['0'], (primaryUrl) => recreateBenchDatabase(primaryUrl(DATABASE)))
const setups = [
  { id: 'primary', label: 'primary (no replica URL)', env: {} },
  { id: 'replica', label: 'replica (DATABASE_REPLICA_URLS)', env: { DATABASE_REPLICA_URLS: cluster.url(1, DATABASE) } },
]
const scenarios = READS.filter((read) => values.only.split(',').includes(read.id))
const results = new Map<string, { result: LoadResult; primaryCpu: number; replicaCpu: number }[]>()
try {
  for (let round = 1; round <= rounds; round++) {
    for (const setup of setups) {
      const service = await startService({
        database: { kind: 'postgres', url: cluster.url(0, DATABASE) },
        logLevel: 'info',
        poolSize,
        env: setup.env,
      })
      try {
        for (const scenario of scenarios) {
          const spec = (await scenario.prepare({ baseUrl: service.baseUrl, databaseUrl: cluster.url(0, DATABASE), requestBudget: 0 }))()
          // The warm-up also lets the replica replay the login's token family (else the primary confirms each 401).
          await runLoad({ baseUrl: service.baseUrl, spec, connections, durationSeconds: warmup })
          const before = [nodeCpu('node0'), nodeCpu('node1')]
          const result = await runLoad({ baseUrl: service.baseUrl, spec, connections, durationSeconds: duration })
          const reads = Math.max(1, result.completed)
          const primaryCpu = ((nodeCpu('node0') - before[0]!) * 1e6) / reads
          const replicaCpu = ((nodeCpu('node1') - before[1]!) * 1e6) / reads
          process.stderr.write(
            `round ${round} ${scenario.id} ${setup.id}: ${Math.round(result.requestsPerSecond)} req/s, p99 ${result.p99Ms.toFixed(1)} ms, ` +
              `primary ${primaryCpu.toFixed(0)} µs/read, replica ${replicaCpu.toFixed(0)} µs/read, non-2xx ${result.non2xx + result.errors}\n`,
          )
          const key = `${scenario.id} ${setup.id}`
          results.set(key, [...(results.get(key) ?? []), { result, primaryCpu, replicaCpu }])
        }
      } finally {
        await stopChild(service.child)
      }
    }
  }
} finally {
  await cluster.stop()
}

const rows = scenarios.flatMap((scenario) =>
  setups.map((setup) => {
    const runs = results.get(`${scenario.id} ${setup.id}`) ?? []
    const cell = (pick: (run: (typeof runs)[number]) => number, digits = 0) => runs.map((run) => pick(run).toFixed(digits)).join(' / ')
    return `| ${scenario.route} | ${setup.label} | ${cell((run) => run.result.requestsPerSecond)} | ${cell((run) => run.result.p99Ms, 1)} | ${cell((run) => run.result.non2xx + run.result.errors)} | ${cell((run) => run.primaryCpu)} | ${cell((run) => run.replicaCpu)} |`
  }),
)
process.stdout.write(
  [
    `Routes ${scenarios.map((scenario) => scenario.route).join(', ')}, ${connections} connections, DATABASE_POOL_SIZE=${poolSize}, ${rounds} rounds of ${duration} s after ${warmup} s warm-up, alternating; a primary and one streaming replica on the same machine:`,
    '',
    '| route | setup | req/s (each round) | p99 ms | failed | primary CPU µs/read | replica CPU µs/read |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
  ].join('\n'),
)

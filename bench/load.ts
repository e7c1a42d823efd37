import autocannon from 'autocannon'
import { ResourceSampler } from './processes.js'
import type { LoadSpec } from './scenarios.js'

export interface LoadOptions {
  baseUrl: string
  spec: LoadSpec
  connections: number
  durationSeconds: number
  /** Requests per second over all connections; unset means as fast as the server answers. */
  overallRate?: number
  /** The server process whose RSS and CPU are sampled during the run. */
  serverPid?: number
  /** The database whose PostgreSQL backends' CPU is counted. */
  database?: string
}

export interface LoadResult {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  completed: number
  non2xx: number
  /** Connection errors and timeouts. */
  errors: number
  statusCodes: Record<string, number>
  seconds: number
  /** RSS of the server in MiB: every sample, their maximum, and the median of the run's second half. */
  rssSamples: number[]
  rssMax: number
  rssSteady: number
  /** Server, PostgreSQL (the bench database's backends) and runner CPU in percent of one core; machine CPU in percent of all cores. */
  serverCpuPercent: number
  postgresCpuPercent: number
  runnerCpuPercent: number
  machineCpuPercent: number
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}

const percentile = (sorted: Float64Array, p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/**
 * Response times in milliseconds with sub-millisecond precision: autocannon's own histogram counts
 * whole milliseconds, too coarse for a 1 ms floor.
 */
class Latencies {
  private values = new Float64Array(65_536)
  private count = 0

  add(ms: number): void {
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2)
      grown.set(this.values)
      this.values = grown
    }
    this.values[this.count++] = ms
  }

  summary(): { p50: number; p99: number; max: number } {
    const sorted = this.values.slice(0, this.count).sort()
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? 0 }
  }
}

function autocannonRun(options: autocannon.Options, latencies: Latencies): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolve(result)))
    instance.on('response', (_client, _status, _bytes, responseTime) => latencies.add(responseTime))
  })
}

function statusCounts(result: autocannon.Result): Record<string, number> {
  return Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count ?? 0]))
}

/** One autocannon run in this (the runner's) process, with the server's resources sampled meanwhile. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const sampler = options.serverPid === undefined ? undefined : new ResourceSampler(options.serverPid, options.database ?? 'bench')
  const { path, ...spec } = options.spec
  const latencies = new Latencies()
  const result = await autocannonRun(
    {
      url: `${options.baseUrl}${path}`,
      ...spec,
      connections: options.connections,
      pipelining: 1,
      duration: options.durationSeconds,
      timeout: 10,
      ...(options.overallRate ? { overallRate: options.overallRate } : {}),
    },
    latencies,
  )
  const times = latencies.summary()
  const resources = sampler?.stop()
  const rss = resources?.rss ?? []
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: times.p50,
    p99Ms: times.p99,
    maxMs: times.max,
    completed: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    statusCodes: statusCounts(result),
    seconds: result.duration,
    rssSamples: rss,
    rssMax: rss.length ? Math.max(...rss) : 0,
    rssSteady: median(rss.slice(Math.floor(rss.length / 2))),
    serverCpuPercent: resources?.cpuPercent ?? 0,
    postgresCpuPercent: resources?.postgresPercent ?? 0,
    runnerCpuPercent: resources?.runnerPercent ?? 0,
    machineCpuPercent: resources?.machinePercent ?? 0,
  }
}

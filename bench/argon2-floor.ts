/**
 * Floor (b): raw argon2.verify throughput with the service's parameters (ARGON2_OPTIONS), keeping
 * CONCURRENCY verifications in flight for DURATION seconds, like CONCURRENCY HTTP connections
 * logging in. argon2 runs on libuv's thread pool, so UV_THREADPOOL_SIZE (inherited; 4 when unset)
 * bounds how many run at once. Prints one JSON line. Started by bench/run.ts as its own process.
 */
import argon2 from 'argon2'
import { ARGON2_OPTIONS } from '../src/auth/passwords.js'

const concurrency = Number(process.env.CONCURRENCY ?? 10)
const durationMs = Number(process.env.DURATION ?? 10) * 1000
const warmupMs = Number(process.env.WARMUP ?? 2) * 1000
const password = 'Demo#2026!'
const hash = await argon2.hash(password, ARGON2_OPTIONS)

/** Runs verifications on `concurrency` lanes until `ms` has passed; returns each one's latency. */
async function load(ms: number): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = []
  const started = performance.now()
  const deadline = started + ms
  const lane = async () => {
    while (performance.now() < deadline) {
      const begin = performance.now()
      if (!(await argon2.verify(hash, password))) throw new Error('argon2 floor: the verification failed')
      latencies.push(performance.now() - begin)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane))
  return { latencies, seconds: (performance.now() - started) / 1000 }
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

await load(warmupMs)
const cpuBefore = process.cpuUsage()
const { latencies, seconds } = await load(durationMs)
const cpu = process.cpuUsage(cpuBefore)
const sorted = [...latencies].sort((a, b) => a - b)
process.stdout.write(
  JSON.stringify({
    verifies: latencies.length,
    seconds,
    perSecond: latencies.length / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    // CPU time per verification (all threads of this process): less sensitive to other load than the rate.
    cpuMsPerVerify: (cpu.user + cpu.system) / 1000 / latencies.length,
    concurrency,
    threadpoolSize: process.env.UV_THREADPOOL_SIZE ?? '4 (default)',
  }) + '\n',
)

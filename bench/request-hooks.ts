/**
 * `npx tsx bench/request-hooks.ts`: what the per-request observability costs in isolation, on a
 * bare Fastify route through `inject`: the metrics plugin's onResponse hook, and the trace id
 * on the request's logger (childLoggerFactory), each against neither. Batches of the three
 * alternate in one process, so that a busy machine's drift falls on all alike; the medians'
 * differences are the cost per request (a full read costs a few hundred µs: bench/RESULTS.md).
 */
import Fastify from 'fastify'
import { traceChildLoggerFactory } from '../src/observability/trace-context.js'
import metricsPlugin from '../src/plugins/metrics.js'
import { median } from './report.js'

const nowhere = { write: () => undefined }
const BATCH = 5000
const ROUNDS = 16

async function make(metrics: boolean, traceId: boolean) {
  const app = Fastify({ logger: { level: 'info', stream: nowhere }, ...(traceId ? { childLoggerFactory: traceChildLoggerFactory() } : {}) })
  await app.register(metricsPlugin, { requests: metrics })
  app.get('/a/:id/b/:other', async () => ({ ok: true }))
  await app.ready()
  return app
}

type App = Awaited<ReturnType<typeof make>>

async function batch(app: App): Promise<number> {
  const started = process.cpuUsage()
  for (let i = 0; i < BATCH; i += 1) await app.inject({ method: 'GET', url: '/a/1/b/2' })
  const used = process.cpuUsage(started)
  return (used.user + used.system) / BATCH
}

const variants: [string, App][] = [
  ['neither', await make(false, false)],
  ['metrics hook', await make(true, false)],
  ['trace id', await make(false, true)],
]
for (const [, app] of variants) for (let warm = 0; warm < 2; warm += 1) await batch(app)
const samples = new Map<string, number[]>(variants.map(([label]) => [label, []]))
for (let round = 0; round < ROUNDS; round += 1) {
  for (const [label, app] of round % 2 === 0 ? variants : [...variants].reverse()) samples.get(label)!.push(await batch(app))
}
const base = median(samples.get('neither')!)
for (const [label, values] of samples) {
  const mid = median(values)
  process.stdout.write(`${label.padEnd(14)} ${mid.toFixed(2)} µs/req (${label === 'neither' ? 'baseline' : `+${(mid - base).toFixed(2)} µs`})\n`)
}

/**
 * `npx tsx bench/metrics-ab.ts`: CPU per read with the metrics on (METRICS_PORT set: the request hook
 * and the pool's acquisition timing) against off, both apps in one process on the same bench
 * database, driven through `inject` in short alternating batches. On a machine shared with other
 * work, separate processes measured minutes apart drifted by more than the metrics could cost
 * (bench:compare); alternating batches in one process put the drift on both sides alike. `inject`
 * skips the socket and HTTP parsing, so the per-request figures are below a real server's: compare
 * the difference in µs, not the ratio.
 */
import { parseArgs } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { DEMO } from '../db/seed/ids.js'
import { DEMO_PASSWORD } from '../db/seed/demo.js'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { recreateBenchDatabase } from './database.js'
import { median } from './report.js'
import { BENCH_SECRETS } from './secrets.js'

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/bench' },
    rounds: { type: 'string', default: '30' },
    batch: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '10' },
    fresh: { type: 'boolean', default: false },
  },
})
const databaseUrl = values['database-url']
const rounds = Number(values.rounds)
const batch = Number(values.batch)
const concurrency = Number(values.concurrency)

const { roles, titles } = DEMO
const ROUTES = [
  { id: 'r4', email: 'alice@acme.example', path: '/api/company/v1/get-user-companies' },
  { id: 'r6', email: 'bob@beta.example', path: `/api/company/v1/${roles.betaBuyer}/chat/partners/${roles.acmeSeller}/presence` },
  { id: 'r7', email: 'bob@beta.example', path: `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}` },
  { id: 'r9', email: 'bob@beta.example', path: `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents` },
]

/** Log lines are made and serialised as in production, then dropped. */
const nowhere = { write: () => undefined }

async function variant(metricsPort: string): Promise<FastifyInstance> {
  const config = loadConfig({
    NODE_ENV: 'production',
    ...BENCH_SECRETS,
    DATABASE_URL: databaseUrl,
    ACCESS_TOKEN_TTL: '1h',
    LOG_LEVEL: 'info',
    METRICS_PORT: metricsPort,
  })
  const app = await buildApp(config, { logDestination: nowhere })
  await app.ready()
  return app
}

async function token(app: FastifyInstance, email: string): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email, password: DEMO_PASSWORD } })
  if (response.statusCode !== 200) throw new Error(`login ${email}: ${response.statusCode}`)
  return response.json<{ access: string }>().access
}

/** CPU µs per request over one batch, `concurrency` requests in flight. */
async function runBatch(app: FastifyInstance, path: string, authorization: string): Promise<number> {
  let left = batch
  const started = process.cpuUsage()
  const worker = async () => {
    while (left > 0) {
      left -= 1
      const response = await app.inject({ method: 'GET', url: path, headers: { authorization } })
      if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const used = process.cpuUsage(started)
  return (used.user + used.system) / batch
}

if (values.fresh) await recreateBenchDatabase(databaseUrl)
const variants = [
  { label: 'metrics on', app: await variant('9464') },
  { label: 'metrics off', app: await variant('0') },
]
for (const route of ROUTES) {
  const auth = `Bearer ${await token(variants[0]!.app, route.email)}`
  const samples = variants.map(() => [] as number[])
  for (const { app } of variants) for (let warm = 0; warm < 3; warm += 1) await runBatch(app, route.path, auth)
  for (let round = 0; round < rounds; round += 1) {
    // Each round starts with the other variant, so that neither always follows the same one.
    const order = round % 2 === 0 ? [0, 1] : [1, 0]
    for (const index of order) samples[index]!.push(await runBatch(variants[index]!.app, route.path, auth))
  }
  const [on, off] = samples.map(median) as [number, number]
  process.stdout.write(
    `${route.id}: metrics on ${on.toFixed(1)} µs/req, off ${off.toFixed(1)} µs/req, difference ${(on - off).toFixed(1)} µs (${((on / off - 1) * 100).toFixed(1)} %)\n`,
  )
}
for (const { app } of variants) await app.close()

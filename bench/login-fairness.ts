/**
 * Issue 42 item 4: the owner's correct logins while strangers flood the password-hashing queue.
 * The built service (`npm run build`; NODE_ENV=production, TRUST_PROXY=true so that
 * X-Forwarded-For names each client) on a fresh demo database; alice logs in once from her home
 * address, then logs in again and again, one at a time, while `--guessers` concurrent guessers
 * (each a loop of wrong logins) come from one /64, then from 40 /24s. Each flood runs twice: with
 * the default failure limits, and with them out of reach, so that every guess reaches the hashing
 * queue. Goal: ≥ 99 % of the owner's logins answered 200.
 *
 *   npm run bench:login-fairness -- [--seconds 20] [--guessers 300] [--database-url postgres://…/bench_login_fairness]
 */
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { seedDemoData } from '../db/seed/demo.js'
import { DEMO_PASSWORD } from '../db/seed/demo.js'
import { createPostgresDatabase, migrateToLatest } from '../src/db/database.js'
import { recreateEmptyDatabase } from './database.js'
import { installCleanup, stopChild } from './processes.js'
import { startService } from './servers.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    owners: { type: 'string', default: '4' },
    limits: { type: 'string', default: 'default,out-of-reach' },
    guessers: { type: 'string', default: '300' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/bench_login_fairness' },
  },
})
const seconds = Number(values.seconds)
const guessers = Number(values.guessers)
const owners = Number(values.owners)
const limitSets = values.limits.split(',')
const databaseUrl = values['database-url']
const HOME = '203.0.113.10'

type Flood = { name: string; guess: (index: number) => { address: string; email: string } }
const random = (limit: number) => Math.floor(Math.random() * limit)
const hex = () => random(0x10000).toString(16)
const FLOODS: Flood[] = [
  {
    name: 'one /64',
    guess: () => ({ address: `2001:db8:77:1:${hex()}:${hex()}:${hex()}:${hex()}`, email: `nobody-${random(1e9)}@nowhere.example` }),
  },
  {
    name: '40 /24s',
    // Half guess at the owner's account, half at unknown e-mails.
    guess: (index) => ({
      address: `198.51.${index % 40}.${1 + random(254)}`,
      email: index % 2 === 0 ? 'alice@acme.example' : `nobody-${random(1e9)}@nowhere.example`,
    }),
  },
]

/** The status, with the problem's detail when it is a 503 (which cause: the hashing queue, the database, the handler's timeout). */
async function login(baseUrl: string, address: string, email: string, password: string): Promise<number | string> {
  try {
    const response = await fetch(`${baseUrl}/api/auth/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
      body: JSON.stringify({ email, password }),
    })
    const body = await response.text()
    return response.status === 503 ? `503 (${(JSON.parse(body) as { detail?: string }).detail})` : response.status
  } catch {
    return 0
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN

async function measure(baseUrl: string, flood: Flood) {
  const stopAt = performance.now() + seconds * 1000
  const guessStatuses = new Map<number, number>()
  const guesser = async (index: number) => {
    while (performance.now() < stopAt) {
      const { address, email } = flood.guess(index)
      const status = await login(baseUrl, address, email, `guess ${random(1e9)}`)
      const code = typeof status === 'string' ? 503 : status
      guessStatuses.set(code, (guessStatuses.get(code) ?? 0) + 1)
    }
  }
  const statuses: (number | string)[] = []
  const times: number[] = []
  const owner = async () => {
    // Once the flood is under way.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    while (performance.now() < stopAt) {
      const started = performance.now()
      statuses.push(await login(baseUrl, HOME, 'alice@acme.example', DEMO_PASSWORD))
      times.push(performance.now() - started)
    }
  }
  await Promise.all([...Array.from({ length: owners }, owner), ...Array.from({ length: guessers }, (_, index) => guesser(index))])
  times.sort((a, b) => a - b)
  const ok = statuses.filter((status) => status === 200).length
  const others = [...new Set(statuses.filter((status) => status !== 200))].map(
    (status) => `${statuses.filter((s) => s === status).length} × ${status}`,
  )
  return {
    owner: `${ok} / ${statuses.length} (${((ok / statuses.length) * 100).toFixed(1)} %)${others.length ? `; ${others.join(', ')}` : ''}`,
    latency: `${percentile(times, 0.5).toFixed(0)} / ${percentile(times, 0.99).toFixed(0)}`,
    guesses: [...guessStatuses]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${count} × ${status}`)
      .join(', '),
  }
}

async function main(): Promise<void> {
  installCleanup()
  await recreateEmptyDatabase(databaseUrl)
  const handle = createPostgresDatabase({ connectionString: databaseUrl, poolSize: 2 })
  await migrateToLatest(handle.db)
  await seedDemoData(handle.db)
  await handle.db.destroy()
  // The load average stays apart from the table (bench/results.ts writes it beside the figures).
  console.error(`load average before: ${loadavg().join(' ')}`)
  console.log(`${guessers} guessers, the owner logging in from a familiar address in ${owners} loops, ${seconds} s per flood:\n`)
  console.log('| flood | failure limits | owner 200 | owner p50 / p99 ms | guesses answered |')
  console.log('| --- | --- | ---: | ---: | --- |')
  for (const limits of limitSets) {
    const env = {
      TRUST_PROXY: 'true',
      // The service's own quotas and requests at once: they are part of what keeps strangers out.
      RATE_LIMITS: undefined,
      CONCURRENCY_LIMITS: undefined,
      ...(limits === 'default'
        ? {}
        : { LOGIN_FAILURES_PER_ADDRESS: '999999', LOGIN_FAILURES_PER_ACCOUNT: '999999', LOGIN_FAILURES_PER_CLIENT: '999999' }),
    }
    for (const flood of FLOODS) {
      const service = await startService({ database: { kind: 'postgres', url: databaseUrl }, logLevel: 'error', poolSize: 10, env })
      try {
        if ((await login(service.baseUrl, HOME, 'alice@acme.example', DEMO_PASSWORD)) !== 200) throw new Error('the owner cannot log in')
        const result = await measure(service.baseUrl, flood)
        console.log(`| ${flood.name} | ${limits} | ${result.owner} | ${result.latency} | ${result.guesses} |`)
      } finally {
        await stopChild(service.child)
      }
    }
  }
  console.error(`load average after: ${loadavg().join(' ')}`)
}

await main()

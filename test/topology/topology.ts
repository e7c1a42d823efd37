import { spawn } from 'node:child_process'
import http from 'node:http'
import https from 'node:https'
import pg from 'pg'
import { DEMO_PASSWORD } from '../../db/seed/demo.js'
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js'
import { nginxBinary, startNginx, type Nginx } from './nginx.js'
import { pgbouncerBinary, preparedStatementsUnavailable, startPgBouncer, type PgBouncer } from './pgbouncer.js'
import { freePort } from '../helpers/ports.js'

/** Why the topology cannot run here, or undefined when it can. */
export function topologyUnavailable(): string | undefined {
  const missing = [
    ...(process.env.TEST_DATABASE_URL ? [] : ['TEST_DATABASE_URL (a real PostgreSQL)']),
    ...(nginxBinary() ? [] : ['nginx']),
    ...(pgbouncerBinary() ? [] : ['pgbouncer']),
  ]
  if (missing.length === 0) return undefined
  const install = nginxBinary() && pgbouncerBinary() ? '' : ' (Debian: apt-get install nginx-light pgbouncer)'
  return `topology tests skipped: needs ${missing.join(', ')}${install}`
}

export interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
}

/** Drops `database` on the server (whoever is connected), creates it empty, then runs `statements` on the same admin connection. */
export async function recreateDatabase(serverUrl: string, database: string, statements: readonly string[] = []): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    await admin.query(`CREATE DATABASE "${database}"`)
    for (const statement of statements) await admin.query(statement)
  } finally {
    await admin.end()
  }
}

export interface RequestOptions {
  method?: string
  path: string
  headers?: Record<string, string>
  body?: unknown
  from?: string
  timeoutMs?: number
  /** HTTPS, trusting this authority's certificate (the gateway's: Nginx.ca); plain HTTP without. */
  ca?: string
}

/**
 * One request, on a connection of its own, from `from` (a loopback address other than the
 * gateway's 127.0.0.1, so the service can tell the client from the gateway).
 */
export function request(port: number, options: RequestOptions): Promise<Answer> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body)
  return new Promise((resolve, reject) => {
    const outgoing = (options.ca ? https : http).request(
      {
        ...(options.ca ? { ca: options.ca } : {}),
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        localAddress: options.from ?? '127.0.0.2',
        agent: false,
        headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...options.headers },
        timeout: options.timeoutMs ?? 30_000,
      },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString() }))
        response.on('error', reject)
      },
    )
    outgoing.on('timeout', () => outgoing.destroy(new Error('client timeout')))
    outgoing.on('error', reject)
    outgoing.end(body)
  })
}

/** A demo user's access token, logged in on the instance at `port` (a failed login throws, naming the answer). */
export async function demoAccessToken(port: number, email: string): Promise<string> {
  const answer = await request(port, { method: 'POST', path: '/api/auth/v1/token', body: { email, password: DEMO_PASSWORD } })
  if (answer.status !== 200) throw new Error(`login ${email}: ${answer.status} ${answer.body}`)
  return (JSON.parse(answer.body) as { access: string }).access
}

export interface Topology {
  gateway: Nginx
  bouncer: PgBouncer
  instances: ServerProcess[]
  ports: number[]
  /** Each instance's metrics port, when started with `metrics`. */
  metricsPorts: number[]
  database: string
  /** SIGTERMs instance `index` (keeping it out of the gateway meanwhile, as a rolling deploy does), restarts it, puts it back. */
  restart(index: number, beforeStop?: () => Promise<void>): Promise<{ exitCode: number | null; notReadyMs: number; tookMs: number }>
  stop(): Promise<void>
}

/** Runs a command to its end; rejects with its output when it exits non-zero. */
export function run(command: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += String(chunk)))
    child.stderr.on('data', (chunk: Buffer) => (output += String(chunk)))
    child.on('exit', (code) => (code === 0 ? resolve(output) : reject(new Error(`${args.join(' ')} exited ${code}:\n${output}`))))
  })
}

/**
 * The fleet of the issue on this machine: nginx in front of two service processes, both on
 * PgBouncer (transaction mode) in front of a database of their own on the test server, sharing
 * the login counters in Redis. The database is made and filled with `npm run migrate` / `seed`'s
 * code through PgBouncer, as an operator would. `name` tells its database apart from another test
 * file's fleet; `metrics` gives each instance a metrics port.
 */
export async function startTopology(
  env: Record<string, string>,
  deregister = true,
  options: { name?: string; metrics?: boolean } = {},
): Promise<Topology> {
  const serverUrl = new URL(process.env.TEST_DATABASE_URL ?? '')
  const database = `${decodeURIComponent(serverUrl.pathname.slice(1))}_${options.name ?? 'topology'}`
  await recreateDatabase(serverUrl.toString(), database, [
    // The documented way to give the service its settings behind PgBouncer (README, "behind PgBouncer").
    `ALTER ROLE CURRENT_USER IN DATABASE "${database}" SET plan_cache_mode = force_generic_plan`,
    `ALTER ROLE CURRENT_USER IN DATABASE "${database}" SET statement_timeout = '2s'`,
  ])
  // PgBouncer ≥ 1.21 (PGBOUNCER_BINARY) keeps named statements: the service runs with them, as in production.
  const keepsNames = preparedStatementsUnavailable() === undefined
  const bouncer = await startPgBouncer(serverUrl.toString(), { default_pool_size: '10', ...(keepsNames ? { max_prepared_statements: '200' } : {}) })
  const cliEnv = { DATABASE_URL: bouncer.url(database), DATABASE_PREPARED_STATEMENTS: keepsNames ? 'true' : 'false' }
  await run(process.execPath, ['--import', 'tsx', 'src/cli/migrate.ts'], cliEnv)
  await run(process.execPath, ['--import', 'tsx', 'src/cli/seed.ts'], cliEnv)

  const ports = [await freePort(), await freePort()]
  const metricsPorts = options.metrics ? [await freePort(), await freePort()] : []
  const instanceEnv = (port: number) => {
    const metricsPort = metricsPorts[ports.indexOf(port)]
    return { ...env, ...cliEnv, PORT: String(port), ...(metricsPort ? { METRICS_PORT: String(metricsPort) } : {}) }
  }
  const instances = await Promise.all(ports.map((port) => startServerProcess(instanceEnv(port))))
  const gateway = await startNginx(ports)

  const topology: Topology = {
    gateway,
    bouncer,
    instances,
    ports,
    metricsPorts,
    database,
    async restart(index, beforeStop) {
      const port = ports[index]!
      const instance = instances[index]!
      await beforeStop?.()
      const signalled = Date.now()
      instance.child.kill('SIGTERM')
      let notReadyMs = -1
      while (Date.now() - signalled < 5_000) {
        const ready = await request(port, { path: '/health/ready', from: '127.0.0.1', timeoutMs: 2_000 }).catch(() => undefined)
        if (ready?.status === 503) {
          notReadyMs = Date.now() - signalled
          break
        }
      }
      // What a rolling deploy does once readiness fails: the gateway stops sending to the instance.
      if (deregister) await gateway.setUpstreams(ports.filter((other) => other !== port))
      const exitCode = await instance.exited
      const tookMs = Date.now() - signalled
      instances[index] = await startServerProcess(instanceEnv(port))
      for (let waited = 0; waited < 10_000; waited += 100) {
        const ready = await request(port, { path: '/health/ready', from: '127.0.0.1' }).catch(() => undefined)
        if (ready?.status === 200) break
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      if (deregister) await gateway.setUpstreams(ports)
      return { exitCode, notReadyMs, tookMs }
    },
    async stop() {
      await gateway.stop()
      await Promise.all(instances.map((instance) => instance.cleanup()))
      await bouncer.stop()
    },
  }
  return topology
}

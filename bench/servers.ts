import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, spawnNode, waitForServer, type StartTimes } from './processes.js'
import { BENCH_SECRETS } from './secrets.js'

export const REPO_ROOT = join(import.meta.dirname, '..')

export interface RunningServer {
  child: ChildProcess
  pid: number
  baseUrl: string
  startTimes: StartTimes
}

export type ServiceDatabase = { kind: 'postgres'; url: string } | { kind: 'pglite'; dir: string }

export interface ServiceOptions {
  database: ServiceDatabase
  logLevel: string
  poolSize: number
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeArgs?: string[]
  /** Extra environment, e.g. `MALLOC_ARENA_MAX` for an experiment. */
  env?: NodeJS.ProcessEnv
  logFile?: string
  /** Another built checkout of this repository to run instead of this one (bench:compare). */
  root?: string
}

/** Only what the processes need from the runner's environment, so a stray variable cannot skew a run. */
function baseEnvironment(): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'LANG', 'TZ', 'UV_THREADPOOL_SIZE']
  return Object.fromEntries(keep.flatMap((key) => (process.env[key] === undefined ? [] : [[key, process.env[key]]])))
}

/** The node flags of `npm start` (package.json), so that the service runs here as it does in production. */
export function productionNodeFlags(root = REPO_ROOT): string[] {
  const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }
  const [, ...words] = packageJson.scripts.start.split(/\s+/)
  return words.filter((word) => word.startsWith('--'))
}

/**
 * The built service (`node dist/server.js` with `npm start`'s flags, as in production: run `npm run build` first) as
 * its own process on a free loopback port, with NODE_ENV=production, the bench's own secrets
 * (bench/secrets.ts) and ALLOW_DEMO_DATA=true: the bench's database holds the demo accounts. Resolves once `/health/ready` answers 200, with the start-up times.
 */
/** Quotas and requests at once that no bench reaches (src/fairness/). */
export const UNREACHED_LIMITS = {
  RATE_LIMITS: 'reads=999999999,writes=999999999,authentication=999999999,webhooks=999999999',
  CONCURRENCY_LIMITS: 'reads=999999,writes=999999,authentication=999999,webhooks=999999',
}

export async function startService(options: ServiceOptions): Promise<RunningServer> {
  const port = await freePort()
  // Metrics served as in production (on by default), on a port of its own: several services run at once.
  const metricsPort = await freePort()
  const env: NodeJS.ProcessEnv = {
    ...baseEnvironment(),
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: options.logLevel,
    DATABASE_POOL_SIZE: String(options.poolSize),
    ...BENCH_SECRETS,
    // The bench logs in as the demo users: production refuses their database unless told (issue 33).
    ALLOW_DEMO_DATA: 'true',
    // Tokens must outlive a long run; the lifetime changes no per-request work.
    ACCESS_TOKEN_TTL: '1h',
    // One bench user sends more new Idempotency-Keys in a run than a caller's quota allows (its 429s
    // would be measured as keyed writes); the quota's own cost is one counter either way.
    IDEMPOTENCY_KEYS_PER_CALLER: '99999999',
    // A bench user reads thousands a second, over its quota (300/s): the limits stay in the path,
    // out of reach, or the figures are of 429s. bench:fairness sets them back (undefined: the defaults).
    ...UNREACHED_LIMITS,
    METRICS_PORT: String(metricsPort),
    ...(options.database.kind === 'postgres' ? { DATABASE_URL: options.database.url } : { PGLITE_DIR: options.database.dir }),
    ...options.env,
  }
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name]
  const spawnedAt = performance.now()
  const root = options.root ?? REPO_ROOT
  const child = spawnNode({
    script: 'dist/server.js',
    nodeArgs: [...productionNodeFlags(root), ...(options.nodeArgs ?? [])],
    env,
    cwd: root,
    ...(options.logFile ? { logFile: options.logFile } : {}),
  })
  const startTimes = await waitForServer(child, port, '/health/ready', spawnedAt)
  return { child, pid: child.pid!, baseUrl: `http://127.0.0.1:${port}`, startTimes }
}

/** bench/floor-server.ts (through tsx) on the same database, pool size and log level. */
export async function startFloorServer(options: {
  databaseUrl: string
  logLevel: string
  poolSize: number
  logFile?: string
}): Promise<RunningServer> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = {
    ...baseEnvironment(),
    NODE_ENV: 'production',
    PORT: String(port),
    LOG_LEVEL: options.logLevel,
    DATABASE_URL: options.databaseUrl,
    DATABASE_POOL_SIZE: String(options.poolSize),
    JWT_SIGNING_KEY: BENCH_SECRETS.JWT_SIGNING_KEY,
  }
  const spawnedAt = performance.now()
  const child = spawnNode({
    script: 'bench/floor-server.ts',
    nodeArgs: ['--import', 'tsx'],
    env,
    cwd: REPO_ROOT,
    ...(options.logFile ? { logFile: options.logFile } : {}),
  })
  const startTimes = await waitForServer(child, port, '/health/ready', spawnedAt)
  return { child, pid: child.pid!, baseUrl: `http://127.0.0.1:${port}`, startTimes }
}

/**
 * bench/own-sql-floor.ts (through tsx): each read route's own statement in a bare handler, issue 17.
 * With npm start's node flags, as the service: its small young generation collects garbage about
 * three times as often per request as node's default (profiles of route 6, issue 36), a cost of the
 * flags and not of the service's code, which the floor would otherwise count against the route.
 */
export async function startOwnSqlFloor(databaseUrl: string, poolSize: number, nodeArgs: string[] = [], root = REPO_ROOT): Promise<RunningServer> {
  const port = await freePort()
  const spawnedAt = performance.now()
  const child = spawnNode({
    script: 'bench/own-sql-floor.ts',
    nodeArgs: ['--import', 'tsx', ...productionNodeFlags(root), ...nodeArgs],
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      PORT: String(port),
      LOG_LEVEL: 'info',
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_SIZE: String(poolSize),
      JWT_SIGNING_KEY: BENCH_SECRETS.JWT_SIGNING_KEY,
    },
    cwd: root,
  })
  const startTimes = await waitForServer(child, port, '/health/ready', spawnedAt)
  return { child, pid: child.pid!, baseUrl: `http://127.0.0.1:${port}`, startTimes }
}

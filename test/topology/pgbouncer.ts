import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { freePort, waitForPort } from '../helpers/ports.js'

export interface PgBouncer {
  port: number
  /** A URL of `database` through the pooler (PgBouncer maps every name to the same server). */
  url(database: string): string
  binary: string
  version: readonly number[]
  /** PgBouncer's admin console: PAUSE, RESUME, RECONNECT, SHOW … */
  admin(command: string): Promise<pg.QueryResult>
  log(): Promise<string>
  stop(): Promise<void>
}

/** Debian's (apt-get install pgbouncer): the default everywhere, CI included. */
const DEBIAN_BINARIES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']

/** `PgBouncer 1.25.2` → [1, 25, 2]; undefined when the binary does not run. */
export function pgbouncerVersion(binary: string): [number, number, number] | undefined {
  try {
    const output = execFileSync(binary, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString()
    const match = /PgBouncer (\d+)\.(\d+)(?:\.(\d+))?/.exec(output)
    return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : undefined
  } catch {
    return undefined
  }
}

/**
 * The binary: PGBOUNCER_BINARY when set (a newer PgBouncer built elsewhere), else Debian's; undefined
 * when there is none (Debian: apt-get install pgbouncer).
 */
export function pgbouncerBinary(): string | undefined {
  const chosen = process.env.PGBOUNCER_BINARY
  if (chosen) return pgbouncerVersion(chosen) ? chosen : undefined
  return DEBIAN_BINARIES.find((candidate) => pgbouncerVersion(candidate) !== undefined)
}

/** PgBouncer 1.21 is the first that keeps protocol-level named prepared statements in transaction mode (max_prepared_statements). */
export function keepsPreparedStatements(version: readonly number[]): boolean {
  const [major = 0, minor = 0] = version
  return major > 1 || (major === 1 && minor >= 21)
}

/** Why a test of named prepared statements through PgBouncer cannot run here, or undefined when it can. */
export function preparedStatementsUnavailable(binary = pgbouncerBinary()): string | undefined {
  if (!binary) return 'no pgbouncer (Debian: apt-get install pgbouncer, or PGBOUNCER_BINARY=<path of PgBouncer ≥ 1.21>)'
  const version = pgbouncerVersion(binary)
  if (version && keepsPreparedStatements(version)) return undefined
  return (
    `${binary} is PgBouncer ${version?.join('.') ?? '?'}: max_prepared_statements needs ≥ 1.21 ` +
    '(set PGBOUNCER_BINARY to such a binary to run this case)'
  )
}

/** PgBouncer refuses to run as root: as root, it runs as this user (who must own its folder). */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
  return { uid, gid }
}

/** The pooler's configuration, as compose.yaml's image carries it. */
export const POOLER_CONFIG = 'deploy/pgbouncer/pgbouncer.ini'

export interface LocalPooler {
  /** The PostgreSQL server's address. */
  host: string
  port: number
  listenPort: number
  /** The database's user (DB_USER in compose.yaml): the user list's and the console's. */
  user: string
  authFile: string
  logFile: string
}

/**
 * deploy/pgbouncer/pgbouncer.ini changed only where a deployment changes it (docs/operations.md):
 * the server's address (here `*`, every database name, for the tests' databases), the listening
 * address and port, the user, the user list's and the log's paths. Each change must find its line.
 * `settings` (a test's pool size, a version's max_prepared_statements) replace a line or are added.
 */
export function localPoolerConfig(text: string, pooler: LocalPooler, settings: Record<string, string> = {}): string {
  let config = text
  const change = (pattern: RegExp, replacement: string) => {
    if (!pattern.test(config)) throw new Error(`${POOLER_CONFIG} no longer has ${pattern}: update test/topology/pgbouncer.ts`)
    config = config.replace(pattern, replacement)
  }
  change(/^receivables = host=postgres port=5432 dbname=receivables$/m, `* = host=${pooler.host} port=${pooler.port}`)
  change(/^listen_addr = .*$/m, 'listen_addr = 127.0.0.1')
  change(/^listen_port = 6432$/m, `listen_port = ${pooler.listenPort}`)
  change(/^auth_file = .*$/m, `auth_file = ${pooler.authFile}`)
  change(/^stats_users = receivables$/m, `stats_users = ${pooler.user}`)
  change(/^logfile =$/m, `logfile = ${pooler.logFile}`)
  for (const [key, value] of Object.entries(settings)) {
    const line = new RegExp(`^${key} = .*$`, 'm')
    config = line.test(config) ? config.replace(line, `${key} = ${value}`) : `${config.trimEnd()}\n${key} = ${value}\n`
  }
  return config
}

/**
 * PgBouncer (`binary`, default `pgbouncerBinary()`: Debian's 1.18 unless PGBOUNCER_BINARY says
 * otherwise) on the shipped deploy/pgbouncer/pgbouncer.ini (localPoolerConfig) in front of the
 * server of `serverUrl`, its user list and log in a temporary folder. The console's PAUSE and
 * RESUME need the user in `admin_users`, which the tests add.
 */
export async function startPgBouncer(
  serverUrl: string,
  settings: Record<string, string> = {},
  binary: string | undefined = pgbouncerBinary(),
): Promise<PgBouncer> {
  if (!binary) throw new Error('pgbouncer is not installed')
  const version = pgbouncerVersion(binary)
  if (!version) throw new Error(`${binary} does not run (${binary} --version failed)`)
  const server = new URL(serverUrl)
  const user = decodeURIComponent(server.username || 'postgres')
  // SCRAM between the service and PgBouncer as shipped; the test server trusts PgBouncer's login.
  const password = 'pooler-test-password'
  const dir = await mkdtemp(path.join(tmpdir(), 'pgbouncer-'))
  const port = await freePort()
  const local = {
    host: server.hostname,
    port: Number(server.port || 5432),
    listenPort: port,
    user,
    authFile: path.join(dir, 'users.txt'),
    logFile: path.join(dir, 'pgbouncer.log'),
  }
  const text = localPoolerConfig(await readFile(POOLER_CONFIG, 'utf8'), local, { admin_users: user, ...settings })
  await writeFile(path.join(dir, 'pgbouncer.ini'), text)
  await writeFile(path.join(dir, 'users.txt'), `"${user}" "${password}"\n`)
  const owner = runAs()
  if (owner) {
    for (const file of ['', 'pgbouncer.ini', 'users.txt']) await chown(path.join(dir, file), owner.uid, owner.gid)
  }
  const child: ChildProcess = spawn(binary, [path.join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(owner ?? {}),
  })
  const output: string[] = []
  child.stdout?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  child.stderr?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  await waitForPort(port, exited, () => output.join(''))

  const url = (database: string) => `postgres://${encodeURIComponent(user)}:${password}@127.0.0.1:${port}/${database}`
  return {
    port,
    url,
    binary,
    version,
    async admin(command) {
      const client = new pg.Client({ connectionString: url('pgbouncer') })
      await client.connect()
      try {
        return await client.query(command)
      } finally {
        await client.end()
      }
    },
    log: () => readFile(path.join(dir, 'pgbouncer.log'), 'utf8').catch(() => ''),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT')
      await exited
      await rm(dir, { recursive: true, force: true })
    },
  }
}

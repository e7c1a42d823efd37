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

/**
 * PgBouncer (`binary`, default `pgbouncerBinary()`: Debian's 1.18 unless PGBOUNCER_BINARY says
 * otherwise) in transaction mode in front of the server of `serverUrl` (trust authentication, as
 * the test server), its configuration, socket and log in a temporary folder.
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
  const dir = await mkdtemp(path.join(tmpdir(), 'pgbouncer-'))
  const port = await freePort()
  const ini = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: dir,
    auth_type: 'trust',
    auth_file: path.join(dir, 'users.txt'),
    admin_users: user,
    pool_mode: 'transaction',
    max_client_conn: '500',
    default_pool_size: '20',
    logfile: path.join(dir, 'pgbouncer.log'),
    pidfile: path.join(dir, 'pgbouncer.pid'),
    ...settings,
  }
  const text = [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '[pgbouncer]',
    ...Object.entries(ini).map(([key, value]) => `${key} = ${value}`),
  ].join('\n')
  await writeFile(path.join(dir, 'pgbouncer.ini'), `${text}\n`)
  await writeFile(path.join(dir, 'users.txt'), `"${user}" ""\n`)
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

  const url = (database: string) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`
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

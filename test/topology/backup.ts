import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { appendFile, chmod, chown, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort } from '../helpers/ports.js'
import { queryOnce, streamingUnavailable } from './streaming.js'

/**
 * A PostgreSQL primary archiving to a pgBackRest repository on this machine, as deploy/pgbackrest/
 * runs it: pgbackrest.conf and conf.d/secrets.conf as they are, with this machine's folders and ports in pgBackRest's
 * environment (PGBACKREST_<OPTION> overrides the file), the archive_command of deploy/ha/patroni.yml,
 * and deploy/pgbackrest/backup.sh and restore.sh as an operator runs them. Plain clusters (initdb,
 * pg_ctl): a restore makes a new one from the repository, in a data directory of its own.
 */

const POSTGRES_BIN_DIR = process.env.POSTGRES_BIN_DIR ?? '/usr/lib/postgresql/15/bin'
const DEPLOY = path.resolve('deploy/pgbackrest')
const bin = (name: string) => path.join(POSTGRES_BIN_DIR, name)
export const STANZA = 'receivables'
/** deploy/ha/patroni.yml's archive_command, word for word. */
const ARCHIVE_COMMAND = 'pgbackrest --stanza=receivables archive-push "%p"'

const onPath = (command: string) =>
  execFileSync('sh', ['-c', `command -v ${command} || true`])
    .toString()
    .trim() !== ''

/** Why the drill cannot run here (one line naming what is missing), or undefined. */
export function backupUnavailable(): string | undefined {
  const streaming = streamingUnavailable()
  const missing = [
    ...(streaming ? [streaming.replace(/^replica tests skipped: needs /, '')] : []),
    ...['pgbackrest', 'jq', 'psql'].filter((command) => !onPath(command)),
  ]
  return missing.length === 0 ? undefined : `restore drill skipped: needs ${missing.join(', ')} (Debian: apt-get install pgbackrest jq postgresql-15)`
}

function owner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  }
}

export interface CommandRun {
  code: number | null
  output: string
}

export interface ArchivedCluster {
  root: string
  /** pgBackRest's environment: the shipped files (the passphrase in conf.d/), this machine's folders. */
  env: Record<string, string>
  /** The running servers by port, each with its data directory. */
  url(port: number, database: string): string
  sql<Row = Record<string, unknown>>(port: number, text: string, values?: unknown[], database?: string): Promise<Row[]>
  /** A command as the servers' user with pgBackRest's environment (plus `env`), to its end. */
  run(command: string, args: string[], env?: Record<string, string>): Promise<CommandRun>
  pgbackrest(...args: string[]): Promise<string>
  /** The primary: port and data directory. */
  primary: { port: number; dataDir: string }
  /** Starts a server on `dataDir` (restored, say) on a new port; its port. */
  start(dataDir: string): Promise<number>
  /** pg_ctl stop -m immediate: a lost machine. */
  kill(dataDir: string): Promise<void>
  /** Waits until pg_stat_archiver says `walFile` (or a later one) is archived. */
  waitArchived(port: number, walFile: string, timeoutMs?: number): Promise<void>
  stop(): Promise<void>
}

export function runAs(command: string, args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<CommandRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...owner(),
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += String(chunk)))
    child.stderr.on('data', (chunk: Buffer) => (output += String(chunk)))
    const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    // 'close', not 'exit': the output is all read by then.
    child.on('close', (code) => {
      clearTimeout(killer)
      resolve({ code, output })
    })
  })
}

/** Waits for `check` to return a value, polling every 100 ms (an event: no fixed sleep). */
export async function waitFor<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (error) {
      last = error
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`)
}

/** A primary archiving at least every `archiveTimeout` (when it wrote anything), its stanza created. */
export async function startArchivedCluster(options: { archiveTimeout: string }): Promise<ArchivedCluster> {
  const user = owner()
  const root = await mkdtemp(path.join(tmpdir(), 'restore-drill-'))
  for (const dir of ['', 'repo', 'spool', 'log', 'lock', 'conf.d']) {
    await mkdir(path.join(root, dir), { recursive: true })
    if (user) await chown(path.join(root, dir), user.uid, user.gid)
  }
  await chmod(root, 0o755)
  await copyFile(path.join(DEPLOY, 'pgbackrest.conf'), path.join(root, 'pgbackrest.conf'))
  await chmod(path.join(root, 'pgbackrest.conf'), 0o644)
  // The shipped secrets file with a passphrase of its own: every command, PostgreSQL's included, reads it.
  const secrets = path.join(root, 'conf.d', 'secrets.conf')
  const shipped = await readFile(path.join(DEPLOY, 'conf.d', 'secrets.conf'), 'utf8')
  await writeFile(secrets, shipped.replace(/^repo1-cipher-pass=.*$/m, `repo1-cipher-pass=${randomBytes(24).toString('base64')}`), { mode: 0o600 })
  if (user) await chown(secrets, user.uid, user.gid)
  const primary = { port: await freePort(), dataDir: path.join(root, 'node0') }
  const env: Record<string, string> = {
    PGBACKREST_CONFIG: path.join(root, 'pgbackrest.conf'),
    PGBACKREST_CONFIG_INCLUDE_PATH: path.join(root, 'conf.d'),
    PGBACKREST_REPO1_PATH: path.join(root, 'repo'),
    PGBACKREST_SPOOL_PATH: path.join(root, 'spool'),
    PGBACKREST_LOG_PATH: path.join(root, 'log'),
    PGBACKREST_LOCK_PATH: path.join(root, 'lock'),
    PGBACKREST_PG1_PATH: primary.dataDir,
    PGBACKREST_PG1_PORT: String(primary.port),
    PGBACKREST_PG1_SOCKET_PATH: root,
  }
  const running = new Map<string, number>()
  const run = (command: string, args: string[], extra: Record<string, string> = {}) => runAs(command, args, { ...env, ...extra })
  const must = async (command: string, args: string[]) => {
    const result = await run(command, args)
    if (result.code !== 0) throw new Error(`${path.basename(command)} ${args.join(' ')} exited ${result.code}:\n${result.output}`)
    return result.output
  }
  const pgCtl = (dataDir: string, args: string[]) => must(bin('pg_ctl'), ['-D', dataDir, '-l', `${dataDir}.log`, '-w', '-t', '60', ...args])
  const killAll = () => {
    for (const dataDir of running.keys()) {
      try {
        execFileSync(bin('pg_ctl'), ['-D', dataDir, 'stop', '-m', 'immediate'], { stdio: 'ignore', ...user })
      } catch {
        // already stopped
      }
    }
    rmSync(root, { recursive: true, force: true })
  }
  process.once('exit', killAll)

  const cluster: ArchivedCluster = {
    root,
    env,
    primary,
    url: (port, database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async sql(port, text, values = [], database = 'postgres') {
      return queryOnce(cluster.url(port, database), text, values)
    },
    run,
    pgbackrest: (...args) => must('pgbackrest', [`--stanza=${STANZA}`, ...args]),
    async start(dataDir) {
      const port = running.get(dataDir) ?? (dataDir === primary.dataDir ? primary.port : await freePort())
      // A restored directory carries its source's settings: a port of its own here.
      await appendFile(path.join(dataDir, 'postgresql.conf'), `port = ${port}\n`)
      await pgCtl(dataDir, ['start'])
      running.set(dataDir, port)
      return port
    },
    async kill(dataDir) {
      await pgCtl(dataDir, ['stop', '-m', 'immediate'])
      running.delete(dataDir)
    },
    async waitArchived(port, walFile, timeoutMs = 60_000) {
      await waitFor(`${walFile} archived`, timeoutMs, async () => {
        const [row] = await cluster.sql<{ last: string | null }>(port, 'SELECT last_archived_wal AS last FROM pg_stat_archiver')
        return row?.last && row.last.slice(0, 24) >= walFile ? true : undefined
      })
    },
    async stop() {
      process.removeListener('exit', killAll)
      await Promise.all([...running.keys()].map((dataDir) => pgCtl(dataDir, ['stop', '-m', 'immediate']).catch(() => undefined)))
      await rm(root, { recursive: true, force: true })
    },
  }

  try {
    await must(bin('initdb'), ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--data-checksums'])
    const settings = [
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${root}'`,
      'fsync = off',
      'max_connections = 100',
      // deploy/ha/patroni.yml's archiving, with a shorter archive_timeout (the drill measures the RPO it sets).
      "archive_mode = 'on'",
      `archive_command = '${ARCHIVE_COMMAND.replace(/'/g, "''")}'`,
      `archive_timeout = '${options.archiveTimeout}'`,
    ]
    await appendFile(path.join(primary.dataDir, 'postgresql.conf'), `${settings.join('\n')}\n`)
    await cluster.start(primary.dataDir)
    await cluster.pgbackrest('stanza-create')
    return cluster
  } catch (error) {
    const log = await readFile(`${primary.dataDir}.log`, 'utf8').catch(() => '')
    await cluster.stop().catch(() => undefined)
    throw new Error(`${(error as Error).message}\n${log}`)
  }
}

export const scriptPath = (name: 'backup.sh' | 'restore.sh') => path.join(DEPLOY, name)

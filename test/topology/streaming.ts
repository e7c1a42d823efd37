import { execFileSync, spawn } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { appendFile, chmod, chown, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { freePort } from '../helpers/ports.js'

/** One statement on a connection of its own (a node may be stopped between calls), its rows. */
export async function queryOnce<Row = Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 })
  client.on('error', () => undefined)
  await client.connect()
  try {
    return (await client.query(text, values)).rows as Row[]
  } finally {
    await client.end().catch(() => undefined)
  }
}

/**
 * A PostgreSQL primary with streaming replicas on this machine, as simple as it gets: initdb, then
 * pg_basebackup -R per replica (no Patroni: test/topology/ha.ts has the HA cluster, which takes a
 * minute to start). pg_stat_statements on every node, so a test can count where statements ran.
 * A replica's recovery_min_apply_delay makes its lag deterministic.
 */

const POSTGRES_BIN_DIR = process.env.POSTGRES_BIN_DIR ?? '/usr/lib/postgresql/15/bin'
const bin = (name: string) => path.join(POSTGRES_BIN_DIR, name)

/** The user the servers run as: postgres when the tests run as root (the server refuses root). */
function owner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  }
}

/** Why it cannot run here, or undefined. */
export function streamingUnavailable(): string | undefined {
  const missing = [
    ...(['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'].every((name) => existsSync(bin(name)))
      ? []
      : [`PostgreSQL's server in ${POSTGRES_BIN_DIR} (or POSTGRES_BIN_DIR)`]),
    ...(process.getuid?.() !== 0 || owner() ? [] : ['a postgres user (the server refuses to run as root)']),
  ]
  return missing.length === 0 ? undefined : `replica tests skipped: needs ${missing.join(', ')} (Debian: apt-get install postgresql-15)`
}

export interface StreamingNode {
  port: number
  dataDir: string
}

export interface StreamingCluster {
  /** Node 0 is the primary, the others its replicas. */
  nodes: StreamingNode[]
  url(index: number, database: string): string
  sql<Row = Record<string, unknown>>(index: number, text: string, values?: unknown[], database?: string): Promise<Row[]>
  /** Sets a replica's recovery_min_apply_delay (a reload: its replay waits that long behind each commit). */
  setDelay(index: number, delay: string): Promise<void>
  /** pg_ctl stop -m immediate: a lost replica. */
  stopNode(index: number): Promise<void>
  stop(): Promise<void>
}

/** Runs a command as the servers' user to its end (killed after 60 s: a hung command fails, as test/helpers/run-process.ts does); its output. */
function run(command: string, args: string[]): Promise<string> {
  const user = owner()
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...user,
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += String(chunk)))
    child.stderr.on('data', (chunk: Buffer) => (output += String(chunk)))
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('exit', (code) => {
      clearTimeout(killer)
      if (code === 0) resolve(output)
      else reject(new Error(`${path.basename(command)} ${args.join(' ')} exited ${code}:\n${output}`))
    })
  })
}

/** A primary and `delays.length` replicas, replica i delayed by `delays[i]` ('0' for none). `prepare` runs on the primary before the replicas are cloned. */
export async function startStreamingCluster(
  delays: string[],
  prepare: (primaryUrl: (database: string) => string) => Promise<void>,
): Promise<StreamingCluster> {
  const user = owner()
  const root = await mkdtemp(path.join(tmpdir(), 'replicas-'))
  if (user) await chown(root, user.uid, user.gid)
  await chmod(root, 0o755)
  const nodes: StreamingNode[] = []
  for (let index = 0; index <= delays.length; index++) nodes.push({ port: await freePort(), dataDir: path.join(root, `node${index}`) })
  const started = new Set<number>()

  const pgCtl = (index: number, action: 'start' | 'stop', extra: string[] = []) =>
    run(bin('pg_ctl'), ['-D', nodes[index]!.dataDir, '-l', `${nodes[index]!.dataDir}.log`, '-w', '-t', '30', action, ...extra])
  const killAll = () => {
    for (const index of started) {
      try {
        execFileSync(bin('pg_ctl'), ['-D', nodes[index]!.dataDir, 'stop', '-m', 'immediate'], { stdio: 'ignore', ...user })
      } catch {
        // already stopped
      }
    }
    rmSync(root, { recursive: true, force: true })
  }
  process.once('exit', killAll)

  const cluster: StreamingCluster = {
    nodes,
    url: (index, database) => `postgres://postgres@127.0.0.1:${nodes[index]!.port}/${database}`,
    async sql(index, text, values = [], database = 'postgres') {
      return queryOnce(cluster.url(index, database), text, values)
    },
    async setDelay(index, delay) {
      await appendFile(path.join(nodes[index]!.dataDir, 'postgresql.conf'), `recovery_min_apply_delay = '${delay}'\n`)
      await run(bin('pg_ctl'), ['-D', nodes[index]!.dataDir, 'reload'])
    },
    async stopNode(index) {
      await pgCtl(index, 'stop', ['-m', 'immediate'])
      started.delete(index)
    },
    async stop() {
      process.removeListener('exit', killAll)
      await Promise.all([...started].map((index) => pgCtl(index, 'stop', ['-m', 'immediate']).catch(() => undefined)))
      await rm(root, { recursive: true, force: true })
    },
  }

  try {
    const primary = nodes[0]!
    await run(bin('initdb'), ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'])
    const settings = [
      `port = ${primary.port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${root}'`,
      "shared_preload_libraries = 'pg_stat_statements'",
      'pg_stat_statements.track = all',
      'fsync = off',
      'max_wal_senders = 10',
      'wal_level = replica',
      'hot_standby = on',
      'hot_standby_feedback = on',
      'max_connections = 200',
      // Each node's processes titled by it (`postgres: node0: …`): the bench counts their CPU apart.
      "cluster_name = 'node0'",
    ]
    await appendFile(path.join(primary.dataDir, 'postgresql.conf'), `${settings.join('\n')}\n`)
    await pgCtl(0, 'start')
    started.add(0)
    await cluster.sql(0, 'CREATE EXTENSION pg_stat_statements')
    await prepare((database) => cluster.url(0, database))
    for (const [offset, delay] of delays.entries()) {
      const index = offset + 1
      const node = nodes[index]!
      await run(bin('pg_basebackup'), [
        '-h',
        '127.0.0.1',
        '-p',
        String(primary.port),
        '-U',
        'postgres',
        '-D',
        node.dataDir,
        '-R',
        '-X',
        'stream',
        // An immediate checkpoint: the default spreads it over minutes.
        '--checkpoint=fast',
        '--no-sync',
      ])
      await appendFile(
        path.join(node.dataDir, 'postgresql.conf'),
        `port = ${node.port}\ncluster_name = 'node${index}'\nrecovery_min_apply_delay = '${delay}'\n`,
      )
      await pgCtl(index, 'start')
      started.add(index)
    }
    return cluster
  } catch (error) {
    const logs = await Promise.all(nodes.map((node) => readFile(`${node.dataDir}.log`, 'utf8').catch(() => '')))
    await cluster.stop().catch(() => undefined)
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`)
  }
}

import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs'
import { chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort } from '../helpers/ports.js'
import { scaled } from '../helpers/slowness.js'
import { queryOnce } from './streaming.js'

/**
 * A highly available PostgreSQL on this machine, as deploy/ha/ runs it on three: Patroni on each
 * node (etcd as its store, synchronous replication, pg_rewind), HAProxy's read-write address that
 * follows Patroni's leader and its read-only one on the standbys. The files are deploy/ha/'s own:
 * patroni.yml as it is (plus an overlay of this machine's ports and folders and shorter timings),
 * haproxy.cfg with one `server` line per node, etcd.env with one member. Each node can be killed
 * (a lost machine), stopped, started again (it rejoins as a standby), promoted; HAProxy's
 * read-write address can be pointed at any node (a stale health check).
 */

const DEPLOY = path.resolve('deploy/ha')
const POSTGRES_BIN_DIR = process.env.POSTGRES_BIN_DIR ?? '/usr/lib/postgresql/15/bin'

/** Patroni's timings for the tests: a lost primary is replaced within ~ttl + loop_wait (deploy/ha/patroni.yml keeps Patroni's defaults, 30/10/10). */
export const TEST_TIMINGS = { ttl: 8, loop_wait: 1, retry_timeout: 3 }

function runs(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 20_000 })
    return true
  } catch {
    return false
  }
}

export const haproxyBinary = (): string | undefined => ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((candidate) => runs(candidate, ['-v']))

/** The user the node processes run as: postgres when the tests run as root (the server refuses root), else the tests' own. */
function nodeOwner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
  return { uid, gid }
}

/** Why an HA cluster cannot run here (one line naming what is missing), or undefined when it can. */
export function haUnavailable(): string | undefined {
  const missing = [
    ...(runs('patroni', ['--version']) ? [] : ['patroni']),
    ...(runs('etcd', ['--version']) ? [] : ['etcd']),
    ...(haproxyBinary() ? [] : ['haproxy']),
    ...(existsSync(path.join(POSTGRES_BIN_DIR, 'postgres')) ? [] : [`PostgreSQL's server in ${POSTGRES_BIN_DIR} (or POSTGRES_BIN_DIR)`]),
    ...(process.getuid?.() !== 0 || runs('id', ['-u', 'postgres']) ? [] : ['a postgres user (the server refuses to run as root)']),
  ]
  if (missing.length === 0) return undefined
  return `HA tests skipped: needs ${missing.join(', ')} (Debian: apt-get install patroni etcd-server haproxy postgresql-15)`
}

/** KEY=value lines (comments and blank lines skipped), as systemd's EnvironmentFile reads them. */
export function readEnvFile(file: string): Record<string, string> {
  const entries: Record<string, string> = {}
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim())
    if (match) entries[match[1]!] = match[2]!
  }
  return entries
}

/**
 * deploy/ha/haproxy.cfg for `count` nodes: each listener's `server pg1 … PG1_…` line is the pattern
 * of one line per node (pg1…pgN, PG1_…PGN_…); with 3 nodes the file comes out unchanged.
 */
export function haproxyConfig(text: string, count: number): string {
  const lines = text.split('\n')
  const out: string[] = []
  for (const line of lines) {
    const match = /^(\s*server )pg(\d+)( .*)$/.exec(line)
    if (!match) {
      out.push(line)
      continue
    }
    // The first server line of a block stands for all of them; the others are dropped.
    if (match[2] !== '1') continue
    for (let n = 1; n <= count; n++) out.push(`${match[1]}pg${n}${match[3]!.replaceAll('PG1_', `PG${n}_`)}`)
  }
  return out.join('\n')
}

/** What differs per node in deploy/ha/patroni.env: the names the harness sets, no more, no fewer. */
export function patroniEnvironment(node: { name: string; pgPort: number; apiPort: number; dataDir: string }, etcd: string, passwords: Passwords) {
  return {
    PATRONI_NAME: node.name,
    PATRONI_RESTAPI_CONNECT_ADDRESS: `127.0.0.1:${node.apiPort}`,
    PATRONI_POSTGRESQL_CONNECT_ADDRESS: `127.0.0.1:${node.pgPort}`,
    PATRONI_POSTGRESQL_DATA_DIR: node.dataDir,
    PATRONI_ETCD3_HOSTS: etcd,
    PATRONI_SUPERUSER_PASSWORD: passwords.superuser,
    PATRONI_REPLICATION_PASSWORD: passwords.replication,
    PATRONI_REWIND_PASSWORD: passwords.rewind,
  }
}

/** deploy/ha/haproxy.env's names for `nodes`, pointing at this machine's ports. */
export function haproxyEnvironment(
  nodes: readonly { pgPort: number; apiPort: number }[],
  listen: { socket: string; primary: number; replicas: number },
): Record<string, string> {
  return {
    HAPROXY_ADMIN_SOCKET: listen.socket,
    HAPROXY_PRIMARY_BIND: `127.0.0.1:${listen.primary}`,
    HAPROXY_REPLICAS_BIND: `127.0.0.1:${listen.replicas}`,
    ...Object.fromEntries(
      nodes.flatMap((node, index) => [
        [`PG${index + 1}_ADDRESS`, `127.0.0.1:${node.pgPort}`],
        [`PG${index + 1}_PATRONI_PORT`, String(node.apiPort)],
      ]),
    ),
  }
}

/** The etcd.env names the harness replaces (one member on this machine); the file's others are kept. */
export function etcdEnvironment(dir: string, client: number, peer: number): Record<string, string> {
  return {
    ETCD_NAME: 'harness',
    ETCD_DATA_DIR: dir,
    ETCD_LISTEN_PEER_URLS: `http://127.0.0.1:${peer}`,
    ETCD_LISTEN_CLIENT_URLS: `http://127.0.0.1:${client}`,
    ETCD_INITIAL_ADVERTISE_PEER_URLS: `http://127.0.0.1:${peer}`,
    ETCD_ADVERTISE_CLIENT_URLS: `http://127.0.0.1:${client}`,
    ETCD_INITIAL_CLUSTER: `harness=http://127.0.0.1:${peer}`,
  }
}

interface Passwords {
  superuser: string
  replication: string
  rewind: string
}

export interface HaNodeOptions {
  /** Patroni tags: nofailover, nosync, noloadbalance… (an asynchronous read replica: nofailover + nosync). */
  tags?: Record<string, boolean>
  /** PostgreSQL settings of this node only (recovery_min_apply_delay for a delayed replica). */
  parameters?: Record<string, string>
}

export interface HaNode {
  index: number
  /** Patroni's member name: pg1, pg2… (haproxy.cfg's server names). */
  name: string
  pgPort: number
  apiPort: number
  dir: string
  dataDir: string
  options: HaNodeOptions
}

export interface HaproxyServer {
  name: string
  up: boolean
  maintenance: boolean
}

export interface HaCluster {
  nodes: readonly HaNode[]
  /** HAProxy's read-write address (the primary listener). */
  readWritePort: number
  /** HAProxy's read-only address (the standbys). */
  replicasPort: number
  /** A URL of `database` through the read-write address, as the superuser (or `user`/`password`). */
  url(database: string, credentials?: { user: string; password: string }): string
  /** A URL of `database` on node `index` directly. */
  nodeUrl(index: number, database: string): string
  /** Runs `text` on node `index` directly, or through HAProxy's read-write address ('rw'), as the superuser. */
  sql<Row extends Record<string, unknown> = Record<string, unknown>>(
    target: number | 'rw',
    text: string,
    values?: unknown[],
    database?: string,
  ): Promise<Row[]>
  /** The node whose Patroni holds the leader key (answers 200 on /primary), if any. */
  primary(): Promise<number | undefined>
  /** Waits for a primary other than `not`; its index. */
  waitForPrimary(options?: { not?: number; timeoutMs?: number }): Promise<number>
  /** Waits until node `index` is a running standby (Patroni's /replica answers 200). */
  waitForStandby(index: number, timeoutMs?: number): Promise<void>
  /** Waits until every running node is in the cluster and a synchronous standby is named (strict mode writes wait for one). */
  waitForSynchronousStandby(timeoutMs?: number): Promise<number>
  /** A lost machine: SIGKILL to Patroni and to every PostgreSQL process of the node. */
  killNode(index: number): Promise<void>
  /** Patroni stopped (SIGTERM): it stops PostgreSQL and, on the leader, hands the lock over. */
  stopNode(index: number): Promise<void>
  /** Patroni started again on the node's folder: it rejoins as a standby (rewound by pg_rewind if it was ahead). */
  startNode(index: number): Promise<void>
  /** Whether the node's Patroni runs (started and neither killed nor stopped). */
  running(index: number): boolean
  /** Patroni's manual failover to node `index` (a synchronous standby in synchronous mode); waits until it is the primary. */
  promote(index: number): Promise<void>
  /** Patroni's member list (GET /cluster on any running node). */
  members(): Promise<{ name: string; role: string; state: string; lag?: number | string }[]>
  /** HAProxy's servers of the read-write address. */
  readWriteServers(): Promise<HaproxyServer[]>
  /** Waits until HAProxy's read-write address has one server up: the primary's; its index. */
  waitForReadWriteAddress(options?: { not?: number; timeoutMs?: number }): Promise<number>
  /**
   * Points HAProxy's read-write address at node `index` whatever Patroni says (the checks off, the
   * other servers forced down and their sessions cut): a stale check. The returned function puts
   * every server back as it was, under its checks again, and cuts the sessions of `index`.
   */
  pointReadWriteAt(index: number): Promise<() => Promise<void>>
  /** A command on HAProxy's admin socket. */
  haproxy(command: string): Promise<string>
  /** The last lines of each process's log, for a failure's message. */
  logs(lines?: number): Promise<string>
  /** Node `index`'s Patroni log, whole. */
  patroniLog(index: number): Promise<string>
  /** With `pgbackrest`: pgBackRest's environment on node `index` (its repository, paths, port, passphrase). */
  pgbackrestEnv(index: number): Record<string, string>
  /** Node `index`'s Patroni environment and its configuration folder: for `patronictl -c <conf>` as an operator runs it there. */
  patroniEnv(index: number): { env: Record<string, string>; conf: string }
  /** Stops every process of the cluster and removes its folders. */
  stop(): Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function waitFor<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>, logs: () => Promise<string>): Promise<T> {
  const bound = scaled(timeoutMs)
  const deadline = Date.now() + bound
  for (;;) {
    const value = await check().catch(() => undefined)
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`HA cluster: ${what} not within ${bound} ms\n${await logs()}`)
    await sleep(100)
  }
}

/** A process that exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
    return pid > 0 && alive(pid) ? pid : undefined
  } catch {
    return undefined
  }
}

/** Patroni starts the postmaster in a session of its own: its process group holds every PostgreSQL process of the node. */
function processGroup(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])
  } catch {
    return undefined
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // already gone
  }
}

async function patroni(node: HaNode, route: string, init?: RequestInit, timeoutMs = 2_000): Promise<Response> {
  return fetch(`http://127.0.0.1:${node.apiPort}${route}`, { ...init, signal: AbortSignal.timeout(timeoutMs) })
}

function adminCommand(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = ''
    const socket = net.createConnection(socketPath)
    socket.on('connect', () => socket.end(`${command}\n`))
    socket.on('data', (chunk: Buffer) => (output += String(chunk)))
    socket.on('end', () => resolve(output))
    socket.on('error', reject)
  })
}

/** Starts `count` nodes (or one per options entry): the first becomes the primary, the others its standbys. */
export interface HaClusterOptions {
  /**
   * Keep patroni.yml's archiving and replica creation as shipped (archive-push, the pgbackrest
   * replica method, archive-get), with deploy/pgbackrest/pgbackrest.conf and a repository in the
   * cluster's folder; otherwise they are off (no repository: archive_command /bin/true, basebackup).
   */
  pgbackrest?: boolean
}

export async function startHaCluster(nodesOrCount: number | HaNodeOptions[] = 3, clusterOptions: HaClusterOptions = {}): Promise<HaCluster> {
  const optionsList = typeof nodesOrCount === 'number' ? Array.from({ length: nodesOrCount }, () => ({})) : nodesOrCount
  const owner = nodeOwner()
  const root = await mkdtemp(path.join(tmpdir(), 'ha-'))
  const passwords: Passwords = {
    superuser: randomBytes(12).toString('hex'),
    replication: randomBytes(12).toString('hex'),
    rewind: randomBytes(12).toString('hex'),
  }
  const nodes: HaNode[] = []
  for (const [index, options] of optionsList.entries()) {
    const dir = path.join(root, `pg${index + 1}`)
    nodes.push({ index, name: `pg${index + 1}`, pgPort: await freePort(), apiPort: await freePort(), dir, dataDir: path.join(dir, 'data'), options })
  }
  const patronis = new Map<number, { child: ChildProcess; exited: Promise<void> }>()
  let etcd: ChildProcess | undefined
  let haproxy: ChildProcess | undefined
  const socketPath = path.join(root, 'haproxy.sock')

  const tail = async (file: string, lines: number) =>
    (await readFile(file, 'utf8').catch(() => ''))
      .split('\n')
      .filter((line) => line.trim() !== '')
      .slice(-lines)
      .join('\n')
  const logs = async (lines = 25) => {
    const parts = [`-- etcd\n${await tail(path.join(root, 'etcd.log'), 5)}`, `-- haproxy\n${await tail(path.join(root, 'haproxy.log'), lines)}`]
    for (const node of nodes) parts.push(`-- ${node.name}\n${await tail(path.join(node.dir, 'patroni.log'), lines)}`)
    return parts.join('\n')
  }

  // Whatever ends the test run, no process of the cluster outlives it.
  const killAll = () => {
    for (const { child } of patronis.values()) if (child.pid) signal(child.pid, 'SIGKILL')
    for (const node of nodes) {
      const pid = postmasterPid(node.dataDir)
      const group = pid && processGroup(pid)
      if (group) signal(-group, 'SIGKILL')
    }
    if (etcd?.pid) signal(etcd.pid, 'SIGKILL')
    if (haproxy?.pid) signal(haproxy.pid, 'SIGKILL')
    rmSync(root, { recursive: true, force: true })
  }
  process.once('exit', killAll)

  const spawnLogged = (command: string, args: string[], env: Record<string, string>, log: string, asOwner: boolean) => {
    const fd = openSync(log, 'a')
    try {
      return spawn(command, args, {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', ...env },
        stdio: ['ignore', fd, fd],
        ...(asOwner && owner ? owner : {}),
      })
    } finally {
      closeSync(fd)
    }
  }

  const etcdClient = await freePort()
  const startEtcd = async () => {
    const env = { ...readEnvFile(path.join(DEPLOY, 'etcd.env')), ...etcdEnvironment(path.join(root, 'etcd'), etcdClient, await freePort()) }
    etcd = spawnLogged('etcd', [], env, path.join(root, 'etcd.log'), false)
    await waitFor(
      'etcd healthy',
      20_000,
      async () => {
        const response = await fetch(`http://127.0.0.1:${etcdClient}/health`, { signal: AbortSignal.timeout(1_000) })
        return response.ok ? true : undefined
      },
      logs,
    )
  }

  const writeNodeFiles = async (node: HaNode) => {
    const conf = path.join(node.dir, 'conf')
    await mkdir(conf, { recursive: true })
    await writeFile(path.join(conf, '00-patroni.yml'), await readFile(path.join(DEPLOY, 'patroni.yml')))
    // JSON is YAML: what this machine changes, merged over the file above by Patroni (a folder of configuration files).
    const overlay = {
      restapi: { listen: `127.0.0.1:${node.apiPort}` },
      // Without a repository, archiving and restores from it are off (test/topology/restore.test.ts's).
      bootstrap: { dcs: { ...TEST_TIMINGS, ...(repository ? {} : { postgresql: { parameters: { archive_command: '/bin/true' } } }) } },
      postgresql: {
        listen: `127.0.0.1:${node.pgPort}`,
        bin_dir: POSTGRES_BIN_DIR,
        pgpass: path.join(node.dir, 'pgpass'),
        ...(repository ? {} : { create_replica_methods: ['basebackup'], recovery_conf: { restore_command: '/bin/false' } }),
        parameters: { unix_socket_directories: node.dir, ...node.options.parameters },
      },
      ...(node.options.tags ? { tags: node.options.tags } : {}),
    }
    await writeFile(path.join(conf, '50-harness.yml'), `${JSON.stringify(overlay, null, 2)}\n`)
    const pgbackrestDirs = repository ? ['spool', 'log', 'lock'].map((name) => path.join(node.dir, name)) : []
    for (const dir of pgbackrestDirs) await mkdir(dir, { recursive: true })
    if (owner) {
      for (const file of [node.dir, conf, ...pgbackrestDirs, ...(await readdir(conf)).map((name) => path.join(conf, name))])
        await chown(file, owner.uid, owner.gid)
    }
  }

  // pgbackrest.conf as shipped; this machine's folders, the node's port and the passphrase in pgBackRest's environment.
  const repository = clusterOptions.pgbackrest ? { passphrase: randomBytes(24).toString('base64') } : undefined
  const pgbackrestEnv = (node: HaNode): Record<string, string> =>
    repository
      ? {
          PGBACKREST_CONFIG: path.join(root, 'pgbackrest.conf'),
          PGBACKREST_REPO1_PATH: path.join(root, 'repo'),
          PGBACKREST_REPO1_CIPHER_PASS: repository.passphrase,
          PGBACKREST_SPOOL_PATH: path.join(node.dir, 'spool'),
          PGBACKREST_LOG_PATH: path.join(node.dir, 'log'),
          PGBACKREST_LOCK_PATH: path.join(node.dir, 'lock'),
          PGBACKREST_PG1_PATH: node.dataDir,
          PGBACKREST_PG1_PORT: String(node.pgPort),
          PGBACKREST_PG1_SOCKET_PATH: node.dir,
        }
      : {}

  const startPatroni = (node: HaNode) => {
    const env = { HOME: node.dir, ...patroniEnvironment(node, `127.0.0.1:${etcdClient}`, passwords), ...pgbackrestEnv(node) }
    const child = spawnLogged('patroni', [path.join(node.dir, 'conf')], env, path.join(node.dir, 'patroni.log'), true)
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
    patronis.set(node.index, { child, exited })
  }

  const roleOf = async (node: HaNode, route: '/primary' | '/replica') => (await patroni(node, route, { method: 'OPTIONS' })).status === 200

  const cluster: HaCluster = {
    nodes,
    readWritePort: 0,
    replicasPort: 0,
    url(database, credentials = { user: 'postgres', password: passwords.superuser }) {
      return `postgres://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${cluster.readWritePort}/${database}`
    },
    nodeUrl(index, database) {
      return `postgres://postgres:${passwords.superuser}@127.0.0.1:${nodes[index]!.pgPort}/${database}`
    },
    async sql(target, text, values = [], database = 'postgres') {
      return queryOnce(target === 'rw' ? cluster.url(database) : cluster.nodeUrl(target, database), text, values)
    },
    async primary() {
      for (const node of nodes) {
        if (patronis.has(node.index) && (await roleOf(node, '/primary').catch(() => false))) return node.index
      }
      return undefined
    },
    waitForPrimary({ not, timeoutMs = 60_000 } = {}) {
      return waitFor(
        `a primary${not === undefined ? '' : ` other than ${nodes[not]!.name}`}`,
        timeoutMs,
        async () => {
          const index = await cluster.primary()
          return index !== undefined && index !== not ? index : undefined
        },
        logs,
      )
    },
    async waitForStandby(index, timeoutMs = 60_000) {
      await waitFor(
        `${nodes[index]!.name} a running standby`,
        timeoutMs,
        async () => ((await roleOf(nodes[index]!, '/replica')) ? true : undefined),
        logs,
      )
    },
    async members() {
      for (const node of nodes) {
        if (!patronis.has(node.index)) continue
        const response = await patroni(node, '/cluster').catch(() => undefined)
        if (response?.ok) return ((await response.json()) as { members: { name: string; role: string; state: string }[] }).members
      }
      throw new Error('no Patroni answers')
    },
    waitForSynchronousStandby(timeoutMs = 60_000) {
      return waitFor(
        'a synchronous standby, every running node in the cluster',
        timeoutMs,
        async () => {
          const members = await cluster.members()
          const sync = members.find((member) => member.role === 'sync_standby' && ['running', 'streaming'].includes(member.state))
          const everyone = [...patronis.keys()].every((index) =>
            members.some((member) => member.name === nodes[index]!.name && member.state !== 'stopped'),
          )
          return sync && everyone ? nodes.findIndex((node) => node.name === sync.name) : undefined
        },
        logs,
      )
    },
    async killNode(index) {
      const node = nodes[index]!
      const running = patronis.get(index)
      const pid = postmasterPid(node.dataDir)
      const group = pid && processGroup(pid)
      if (running?.child.pid) signal(running.child.pid, 'SIGKILL')
      if (group) signal(-group, 'SIGKILL')
      await running?.exited
      patronis.delete(index)
      await waitFor(`${node.name}'s PostgreSQL gone`, 10_000, async () => (pid && alive(pid) ? undefined : true), logs)
    },
    async stopNode(index) {
      const running = patronis.get(index)
      if (!running) return
      if (running.child.pid) signal(running.child.pid, 'SIGTERM')
      const stopped = await Promise.race([running.exited.then(() => true), sleep(30_000).then(() => false)])
      if (!stopped) await cluster.killNode(index)
      patronis.delete(index)
    },
    running: (index) => patronis.has(index),
    async startNode(index) {
      if (patronis.has(index)) throw new Error(`${nodes[index]!.name} is running`)
      startPatroni(nodes[index]!)
    },
    async promote(index) {
      const node = nodes[index]!
      // Patroni answers once the failover is done (or has failed).
      const response = await patroni(node, '/failover', { method: 'POST', body: JSON.stringify({ candidate: node.name }) }, 60_000)
      if (!response.ok) throw new Error(`failover to ${node.name}: ${response.status} ${await response.text()}`)
      await waitFor(`${node.name} the primary`, 60_000, async () => ((await roleOf(node, '/primary')) ? true : undefined), logs)
    },
    haproxy: (command) => adminCommand(socketPath, command),
    async readWriteServers() {
      // be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state …: op 2 is up; admin bit 1 is maintenance.
      const text = await cluster.haproxy('show servers state primary')
      return text
        .split('\n')
        .map((line) => line.split(' '))
        .filter((fields) => fields[1] === 'primary' && fields.length > 6)
        .map((fields) => ({ name: fields[3]!, up: fields[5] === '2', maintenance: (Number(fields[6]) & 1) === 1 }))
    },
    waitForReadWriteAddress({ not, timeoutMs = 60_000 } = {}) {
      return waitFor(
        'one server up behind the read-write address',
        timeoutMs,
        async () => {
          const up = (await cluster.readWriteServers()).filter((server) => server.up && !server.maintenance)
          const index = up.length === 1 ? nodes.findIndex((node) => node.name === up[0]!.name) : -1
          return index >= 0 && index !== not ? index : undefined
        },
        logs,
      )
    },
    async pointReadWriteAt(index) {
      const before = await cluster.readWriteServers()
      // Every server's checks off and its state forced: HAProxy would otherwise take a server out of
      // maintenance as up until its checks say otherwise (2 s here), a standby included.
      const force = async () => {
        for (const server of before) {
          await cluster.haproxy(`disable health primary/${server.name}`)
          await cluster.haproxy(`set server primary/${server.name} health ${server.name === nodes[index]!.name ? 'up' : 'down'}`)
          if (server.name !== nodes[index]!.name) await cluster.haproxy(`shutdown sessions server primary/${server.name}`)
        }
      }
      await force()
      // A check already in flight when its health was disabled still lands (up to `timeout check`,
      // 2 s) and can undo the forced state: wait it out, force again, and verify.
      await sleep(2_200)
      await force()
      const forced = (await cluster.readWriteServers()).filter((server) => server.up && !server.maintenance).map((server) => server.name)
      if (forced.join() !== nodes[index]!.name)
        throw new Error(`read-write address forced to ${nodes[index]!.name}, but up: ${forced.join() || 'none'}`)
      return async () => {
        // As they were, the checks on again to keep them so; the sessions on `index` cut.
        for (const server of before) {
          await cluster.haproxy(`set server primary/${server.name} health ${server.up ? 'up' : 'down'}`)
          await cluster.haproxy(`enable health primary/${server.name}`)
        }
        if (!before.find((server) => server.name === nodes[index]!.name)?.up)
          await cluster.haproxy(`shutdown sessions server primary/${nodes[index]!.name}`)
      }
    },
    logs,
    patroniLog: (index) => readFile(path.join(nodes[index]!.dir, 'patroni.log'), 'utf8'),
    pgbackrestEnv: (index) => pgbackrestEnv(nodes[index]!),
    patroniEnv: (index) => {
      const node = nodes[index]!
      return { env: { HOME: node.dir, ...patroniEnvironment(node, `127.0.0.1:${etcdClient}`, passwords) }, conf: path.join(node.dir, 'conf') }
    },
    async stop() {
      process.removeListener('exit', killAll)
      if (haproxy?.pid) signal(haproxy.pid, 'SIGKILL')
      // Patroni first (it would start PostgreSQL again), then an immediate shutdown of each
      // PostgreSQL, which removes its shared memory as a SIGKILL would not.
      for (const { child } of patronis.values()) if (child.pid) signal(child.pid, 'SIGKILL')
      await Promise.all([...patronis.values()].map(({ exited }) => exited))
      const postmasters = nodes.map((node) => postmasterPid(node.dataDir)).filter((pid): pid is number => pid !== undefined)
      for (const pid of postmasters) signal(pid, 'SIGQUIT')
      const deadline = Date.now() + 10_000
      while (postmasters.some(alive) && Date.now() < deadline) await sleep(50)
      for (const pid of postmasters.filter(alive)) {
        const group = processGroup(pid)
        if (group) signal(-group, 'SIGKILL')
      }
      if (etcd?.pid) signal(etcd.pid, 'SIGKILL')
      await rm(root, { recursive: true, force: true })
    },
  }

  try {
    if (owner) await chown(root, owner.uid, owner.gid)
    if (repository) {
      await writeFile(path.join(root, 'pgbackrest.conf'), await readFile(path.resolve('deploy/pgbackrest/pgbackrest.conf')))
      await mkdir(path.join(root, 'repo'))
      if (owner) await chown(path.join(root, 'repo'), owner.uid, owner.gid)
    }
    await startEtcd()
    for (const node of nodes) await writeNodeFiles(node)
    // The first node bootstraps the cluster (initdb); the others clone it (pg_basebackup) once it leads.
    startPatroni(nodes[0]!)
    // The others may start once the first holds the cluster's initialize key: they wait for it to
    // lead, then clone it (pg_basebackup), instead of racing it to initdb.
    const patroniYml = await readFile(path.join(DEPLOY, 'patroni.yml'), 'utf8')
    const key = `${/^namespace: (\S+)/m.exec(patroniYml)?.[1] ?? '/service/'}${/^scope: (\S+)/m.exec(patroniYml)?.[1]}/initialize`
    await waitFor(
      `${nodes[0]!.name} initializing the cluster`,
      60_000,
      async () => {
        const response = await fetch(`http://127.0.0.1:${etcdClient}/v3/kv/range`, {
          method: 'POST',
          body: JSON.stringify({ key: Buffer.from(key).toString('base64') }),
          signal: AbortSignal.timeout(1_000),
        })
        return ((await response.json()) as { kvs?: unknown[] }).kvs?.length ? true : undefined
      },
      logs,
    )
    for (const node of nodes.slice(1)) startPatroni(node)

    cluster.readWritePort = await freePort()
    cluster.replicasPort = await freePort()
    const config = path.join(root, 'haproxy.cfg')
    await writeFile(config, haproxyConfig(await readFile(path.join(DEPLOY, 'haproxy.cfg'), 'utf8'), nodes.length))
    const env = haproxyEnvironment(nodes, { socket: socketPath, primary: cluster.readWritePort, replicas: cluster.replicasPort })
    const binary = haproxyBinary()
    if (!binary) throw new Error('haproxy is not installed')
    haproxy = spawnLogged(binary, ['-f', config, '-db'], env, path.join(root, 'haproxy.log'), false)

    await waitFor(
      `${nodes[0]!.name} bootstrapped as the primary`,
      90_000,
      async () => ((await roleOf(nodes[0]!, '/primary')) ? true : undefined),
      logs,
    )
    for (const node of nodes.slice(1)) await cluster.waitForStandby(node.index, 90_000)
    // In synchronous mode (strict), writes wait until Patroni has named a synchronous standby.
    const dynamic = (await (await patroni(nodes[0]!, '/config')).json()) as { synchronous_mode?: boolean }
    if (nodes.length > 1 && dynamic.synchronous_mode) await cluster.waitForSynchronousStandby(60_000)
    // HAProxy starts with every server up until its checks say otherwise: wait for them to.
    await cluster.waitForReadWriteAddress({ timeoutMs: 30_000 })
    return cluster
  } catch (error) {
    await cluster.stop().catch(() => undefined)
    throw error
  }
}

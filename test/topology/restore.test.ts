import { randomUUID } from 'node:crypto'
import { mkdir, rename, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEMO } from '../../db/seed/ids.js'
import { cnpjCheckDigits } from '../../src/lib/tax-id.js'
import { createDemoDatabase } from '../helpers/database.js'
import { freePort } from '../helpers/ports.js'
import { TEST_SECRETS } from '../helpers/secrets.js'
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js'
import { backupUnavailable, scriptPath, startArchivedCluster, waitFor, type ArchivedCluster } from './backup.js'
import { demoAccessToken, request, type Answer } from './topology.js'

/**
 * The restore drill (issue 47): the service on a primary that archives to pgBackRest
 * (deploy/pgbackrest/), acknowledged writes on routes 5, 11 and 12 while a full backup runs, a
 * named restore point, more writes, an operator's DELETE; then a new cluster restored to the
 * restore point with deploy/pgbackrest/restore.sh, the service on it; the repository unreachable for
 * a while; every node lost and the cluster restored to the end of the archive (its RPO and RTO).
 * Plain clusters (initdb, pg_ctl), no Patroni: the archive and the restore are the same. It makes
 * its own clusters; it runs in the PostgreSQL run only (TEST_DATABASE_URL), so that CI pays once.
 */
const unavailable = process.env.TEST_DATABASE_URL ? backupUnavailable() : 'restore drill skipped: it runs with TEST_DATABASE_URL (the PostgreSQL run)'
if (unavailable) process.stderr.write(`${unavailable}\n`)

const DATABASE = 'receivables'
/** deploy/ha/patroni.yml ships 60 s; the drill's shorter one bounds the writes a whole-cluster loss may lose. */
const ARCHIVE_TIMEOUT_S = 5
const EXTRA_SELLERS = 400
/** Route 5 takes one seller per attempt: each of the drill's four spells of writes may spend this many, so a fast machine cannot use them all up before the last. */
const SOLICITATIONS_PER_SPELL = 100
const RESTORE_POINT = 'before-the-mistake'
const INSTANCE_ENV = { LOG_LEVEL: 'warn', ACCESS_TOKEN_TTL: '1h', DATABASE_CONNECT_TIMEOUT: '1s', DATABASE_STATEMENT_TIMEOUT: '2s', DRAIN_DELAY: '0' }
const { roles } = DEMO
const sellerId = (n: number) => `f0000000-0000-4000-8000-${String(n).padStart(12, '0')}`
const newCnpj = () => {
  const base = Array.from({ length: 12 }, () => Math.floor(Math.random() * 10)).join('')
  return `${base}${cnpjCheckDigits(base)}`
}

type Kind = 'customer keyed' | 'customer' | 'solicitation keyed' | 'esign event'

/** A write as a partner (or the e-signature provider) sent it, and the answer it kept. */
interface Write {
  kind: Kind
  path: string
  key?: string
  body: Record<string, unknown>
  /** The row it made: a customer's or (once answered) a solicitation's id, or the event's envelope key. */
  id: string
  answer?: Answer
  acknowledgedAt?: number
}

describe.skipIf(unavailable !== undefined)(
  'restore drill: pgBackRest archive, point-in-time restore, whole-cluster loss (deploy/pgbackrest/)',
  () => {
    let cluster: ArchivedCluster
    let service: ServerProcess
    let alice: string
    let bob: string
    let nextSeller = 1
    const started: ServerProcess[] = []
    const beforeT: Write[] = []
    const afterT: Write[] = []
    let tokenAfterT = ''
    let metricsPort = 0
    /** Writes acknowledged from the repository's outage on: none may be lost but the last archive_timeout's. */
    const sinceOutage: Write[] = []
    /** Those acknowledged while the repository was away: archived once it is back, so none lost. */
    const duringOutage: Write[] = []

    const port = (server: ServerProcess) => Number(new URL(server.baseUrl).port)
    const startService = async (databasePort: number, env: Record<string, string> = {}) => {
      const server = await startServerProcess({ ...INSTANCE_ENV, DATABASE_URL: cluster.url(databasePort, DATABASE), ...env })
      started.push(server)
      return server
    }

    const make = (kind: Kind): Write => {
      const id = randomUUID()
      if (kind === 'solicitation keyed') {
        const seller = sellerId(nextSeller++)
        return { kind, id, key: randomUUID(), path: `/api/company/v1/${roles.betaBuyer}/document-solicitation/${seller}`, body: { message: 'Drill' } }
      }
      if (kind === 'esign event') {
        const body = {
          event: { name: 'sign', occurred_at: new Date().toISOString(), data: { signer: { email: 'bob@beta.example' } } },
          document: { key: id },
        }
        return { kind, id, path: `/webhook/esign/${TEST_SECRETS.ESIGN_WEBHOOK_SECRETS}/`, body }
      }
      return {
        kind,
        id,
        ...(kind === 'customer keyed' ? { key: randomUUID() } : {}),
        path: `/api/company/v1/${roles.acmeSeller}/customers/${id}`,
        body: { name: 'Drill Customer', tax_id: newCnpj() },
      }
    }

    const send = (server: ServerProcess, write: Write) => {
      const token = write.kind === 'solicitation keyed' ? bob : alice
      const headers: Record<string, string> = {
        ...(write.kind === 'esign event' ? {} : { authorization: `Bearer ${token}` }),
        ...(write.key ? { 'idempotency-key': write.key } : {}),
      }
      return request(port(server), { method: 'POST', path: write.path, headers, body: write.body, timeoutMs: 10_000 })
    }

    /** Writes of every kind, one after another per kind, until `until` resolves (route 5's up to its spell's sellers); the acknowledged ones. */
    const writeUntil = async (server: ServerProcess, until: Promise<unknown>): Promise<Write[]> => {
      const done: Write[] = []
      let running = true
      void until.finally(() => (running = false))
      const kinds: Kind[] = ['customer keyed', 'customer', 'solicitation keyed', 'esign event']
      const lastSeller = nextSeller + SOLICITATIONS_PER_SPELL
      await Promise.all(
        kinds.map(async (kind) => {
          while (running && (kind !== 'solicitation keyed' || nextSeller < lastSeller)) {
            const write = make(kind)
            const answer = await send(server, write).catch(() => undefined)
            if (answer?.status !== 201) continue
            // A solicitation's id is the service's own, in its answer.
            const id = write.kind === 'solicitation keyed' ? (JSON.parse(answer.body) as { id: string }).id : write.id
            done.push({ ...write, id, answer, acknowledgedAt: Date.now() })
          }
        }),
      )
      await until
      return done
    }

    /** The writes of `writes` whose row `databasePort`'s database has. */
    const present = async (databasePort: number, writes: Write[]) => {
      const ids = (...kinds: Kind[]) => writes.filter((write) => kinds.includes(write.kind)).map((write) => write.id)
      const rows = await cluster.sql<{ id: string }>(
        databasePort,
        `SELECT id::text FROM customers WHERE id = ANY($1::uuid[])
       UNION ALL SELECT id::text FROM document_solicitations WHERE id = ANY($2::uuid[])
       UNION ALL SELECT envelope_key FROM webhook_deliveries WHERE envelope_key = ANY($3::text[])`,
        [ids('customer keyed', 'customer'), ids('solicitation keyed'), ids('esign event')],
        DATABASE,
      )
      const found = new Set(rows.map((row) => row.id))
      return writes.filter((write) => found.has(write.id))
    }

    beforeAll(async () => {
      cluster = await startArchivedCluster({ archiveTimeout: `${ARCHIVE_TIMEOUT_S}s` })
      const primary = cluster.primary.port
      await createDemoDatabase((database) => cluster.url(primary, database), DATABASE)
      // Sellers of their own for route 5 (one open solicitation per buyer and seller): one per write.
      await cluster.sql(
        primary,
        `INSERT INTO companies (id, name, trade_name, tax_id)
       SELECT md5('drill company ' || n)::uuid, 'Drill Seller ' || n, 'Seller ' || n, 'D' || lpad(n::text, 11, '0') || '00'
         FROM generate_series(1, $1::int) AS n`,
        [EXTRA_SELLERS],
        DATABASE,
      )
      await cluster.sql(
        primary,
        `INSERT INTO company_roles (id, company_id, role)
       SELECT ('f0000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid, md5('drill company ' || n)::uuid, 'seller'
         FROM generate_series(1, $1::int) AS n`,
        [EXTRA_SELLERS],
        DATABASE,
      )
      metricsPort = await freePort()
      service = await startService(primary, { METRICS_PORT: String(metricsPort) })
      alice = await demoAccessToken(port(service), 'alice@acme.example')
      bob = await demoAccessToken(port(service), 'bob@beta.example')
    }, 180_000)

    afterAll(async () => {
      await Promise.all(started.map((server) => server.cleanup()))
      await cluster?.stop()
    }, 60_000)

    it('restores a new cluster to a restore point: every write acknowledged before it, none after; tokens, keys and events after it are new again', async () => {
      const primary = cluster.primary.port
      // Writes while the full backup runs (backup.sh, as cron runs it: it records the backup for the service's metric).
      const backup = cluster.run('bash', [scriptPath('backup.sh'), 'full'], { PGHOST: cluster.root, PGPORT: String(primary), PGUSER: 'postgres' })
      beforeT.push(...(await writeUntil(service, backup)))
      const backupRun = await backup
      expect(backupRun.code, backupRun.output).toBe(0)
      await cluster.sql(primary, 'SELECT pg_create_restore_point($1)', [RESTORE_POINT])
      // After T: more writes, a new login (its token family), then the operator's mistake.
      tokenAfterT = await demoAccessToken(port(service), 'alice@acme.example')
      const moreWrites = new Promise((resolve) => setTimeout(resolve, 1_500))
      afterT.push(...(await writeUntil(service, moreWrites)))
      await cluster.sql(primary, 'DELETE FROM document_solicitations', [], DATABASE)
      const [{ wal }] = (await cluster.sql<{ wal: string }>(primary, 'SELECT pg_walfile_name(pg_switch_wal()) AS wal')) as [{ wal: string }]
      await cluster.waitArchived(primary, wal)

      // A new cluster from the repository, to T, as docs/runbook.md does it; the service on it.
      const target = path.join(cluster.root, 'restored-to-t')
      const restore = await cluster.run('bash', [scriptPath('restore.sh'), `name:${RESTORE_POINT}`, target])
      expect(restore.code, restore.output).toBe(0)
      const restoredPort = await cluster.start(target)
      await waitFor('the restored cluster promoted', 60_000, async () => {
        const [row] = await cluster.sql<{ recovery: boolean }>(restoredPort, 'SELECT pg_is_in_recovery() AS recovery')
        return row?.recovery === false ? true : undefined
      })
      const restored = await startService(restoredPort)

      const kinds = (writes: Write[]) => [...new Set(writes.map((write) => write.kind))].sort()
      expect(kinds(beforeT)).toEqual(['customer', 'customer keyed', 'esign event', 'solicitation keyed'])
      expect(kinds(afterT)).toEqual(kinds(beforeT))
      expect((await present(restoredPort, beforeT)).length).toBe(beforeT.length)
      expect(await present(restoredPort, afterT)).toEqual([])

      // A token family made after T is unknown there: 401. One from before T still works.
      const companies = (token: string) =>
        request(port(restored), { path: '/api/company/v1/get-user-companies', headers: { authorization: `Bearer ${token}` } })
      expect((await companies(tokenAfterT)).status).toBe(401)
      expect((await companies(alice)).status).toBe(200)
      // Retries: a keyed write acknowledged before T is replayed; one after T runs again (its key went with
      // the data), and the provider's event after T is new; before T, a duplicate.
      const retry = async (write: Write) => {
        const answer = await send(restored, write)
        const replayed = answer.headers['idempotent-replayed'] === 'true'
        const duplicate = write.kind === 'esign event' ? (JSON.parse(answer.body) as { duplicate: boolean }).duplicate : undefined
        return `${write.kind} ${answer.status} ${write.key ? (replayed ? 'replayed' : 'ran') : duplicate ? 'duplicate' : 'new'}`
      }
      const sample = (writes: Write[], kind: Kind) => writes.filter((write) => write.kind === kind).slice(0, 3)
      for (const kind of ['customer keyed', 'solicitation keyed', 'esign event'] as const) {
        const before = await Promise.all(sample(beforeT, kind).map(retry))
        const after = await Promise.all(sample(afterT, kind).map(retry))
        const word = kind === 'esign event' ? ['duplicate', 'new'] : ['replayed', 'ran']
        expect(before).toEqual(before.map(() => `${kind} 201 ${word[0]}`))
        expect(after).toEqual(after.map(() => `${kind} 201 ${word[1]}`))
      }
      process.stderr.write(
        `restore drill: ${beforeT.length} writes acknowledged before the restore point (during the full backup), ${afterT.length} after it; restored ${restore.output.trim().split('\n')[0]}\n`,
      )
    }, 180_000)

    it('refuses a restore target outside the window, without the passphrase or with a wrong one, in one line, restoring nothing', async () => {
      const target = path.join(cluster.root, 'refused')
      const restore = (at: string, env: Record<string, string> = {}) => cluster.run('bash', [scriptPath('restore.sh'), at, target], env)
      const lines = async (at: string, env?: Record<string, string>) => {
        const run = await restore(at, env)
        return `${run.code} ${run.output.trim()}`
      }
      const window = /the repository restores from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00 to \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00; nothing was restored$/
      expect(await lines('2020-01-01 00:00:00+00')).toMatch(
        new RegExp(`^2 restore.sh: 2020-01-01 00:00:00\\+00 is outside the window: ${window.source}`),
      )
      const later = new Date(Date.now() + 3_600_000).toISOString()
      expect(await lines(later)).toMatch(window)
      expect(await lines('yesterday-ish')).toBe("2 restore.sh: 'yesterday-ish' is not a time, latest or name:<restore point>; nothing was restored")
      const passphrase = 'repo1-cipher-pass (/etc/pgbackrest/conf.d/secrets.conf, or PGBACKREST_REPO1_CIPHER_PASS)'
      const noSecrets = path.join(cluster.root, 'no-secrets')
      await mkdir(noSecrets)
      expect(await lines('latest', { PGBACKREST_CONFIG_INCLUDE_PATH: noSecrets })).toBe(
        `2 restore.sh: the repository's passphrase is not set: ${passphrase}; nothing was restored`,
      )
      expect(await lines('latest', { PGBACKREST_REPO1_CIPHER_PASS: 'not-the-passphrase' })).toBe(
        `2 restore.sh: the repository does not decrypt: ${passphrase} is wrong; nothing was restored`,
      )
      await expect(stat(target)).rejects.toThrow()
    }, 60_000)

    it('goes on writing while the repository is unreachable: the archive queues, the service reports the failures, then catches up with nothing lost', async () => {
      const primary = cluster.primary.port
      const archiver = async () =>
        (
          await cluster.sql<{ failed: string; archived: string }>(
            primary,
            'SELECT failed_count::text AS failed, archived_count::text AS archived FROM pg_stat_archiver',
          )
        )[0]!
      const metric = async (name: string) => {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
        const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `))
        return line === undefined ? undefined : Number(line.split(' ')[1])
      }
      const failedBefore = Number((await archiver()).failed)
      const repository = cluster.env.PGBACKREST_REPO1_PATH!
      await rename(repository, `${repository}.away`)
      let outageWrites: Write[] = []
      try {
        const failing = (async () => {
          // A segment to push (the archiver tries at once, and again every second, three times).
          await cluster.sql(primary, 'SELECT pg_switch_wal()')
          await waitFor('an archiving failure', 60_000, async () => (Number((await archiver()).failed) > failedBefore ? true : undefined))
          // The service's metrics say so: its last failure is later than its last success.
          await waitFor('the failure in /metrics', 60_000, async () => {
            const [failed, lastFailed, lastArchived] = await Promise.all([
              metric('db_wal_archive_failed_count'),
              metric('db_wal_archive_last_failed_timestamp_seconds'),
              metric('db_wal_archive_last_archived_timestamp_seconds'),
            ])
            return failed! > failedBefore && lastFailed! > lastArchived! ? true : undefined
          })
        })()
        outageWrites = await writeUntil(service, failing)
      } finally {
        await rename(`${repository}.away`, repository)
      }
      sinceOutage.push(...outageWrites)
      duringOutage.push(...outageWrites)
      const [{ wal }] = (await cluster.sql<{ wal: string }>(primary, 'SELECT pg_walfile_name(pg_switch_wal()) AS wal')) as [{ wal: string }]
      await cluster.waitArchived(primary, wal)
      expect(outageWrites.length).toBeGreaterThan(0)
      const check = await cluster.run('pgbackrest', ['--stanza=receivables', 'check'])
      expect(check.code, check.output).toBe(0)
      process.stderr.write(`restore drill: ${outageWrites.length} writes acknowledged while the repository was away; archive caught up to ${wal}\n`)
    }, 120_000)

    it('restores the whole cluster after every node is lost: the writes of the last archive_timeout at most are missing (RPO), the first 2xx within the RTO', async () => {
      const primary = cluster.primary
      // Writes until two more segments are archived (archive_timeout at work), then the machine is lost.
      const [{ archived }] = (await cluster.sql<{ archived: number }>(
        primary.port,
        'SELECT archived_count::int AS archived FROM pg_stat_archiver',
      )) as [{ archived: number }]
      let lostAt = 0
      const lost = (async () => {
        await waitFor('two segments archived by archive_timeout', 60_000, async () => {
          const [row] = await cluster.sql<{ archived: number }>(primary.port, 'SELECT archived_count::int AS archived FROM pg_stat_archiver')
          return row!.archived >= archived + 2 ? true : undefined
        })
        lostAt = Date.now()
        await cluster.kill(primary.dataDir)
        await rm(primary.dataDir, { recursive: true, force: true })
      })()
      const written = await writeUntil(service, lost)
      sinceOutage.push(...written.filter((write) => write.acknowledgedAt! <= lostAt))

      const restoreStartedAt = Date.now()
      const target = path.join(cluster.root, 'restored-latest')
      const restore = await cluster.run('bash', [scriptPath('restore.sh'), 'latest', target])
      expect(restore.code, restore.output).toBe(0)
      const restoredPort = await cluster.start(target)
      const restored = await startService(restoredPort)
      const firstOk = await waitFor('the first 2xx on the restored cluster', 60_000, async () => {
        const answer = await request(port(restored), { path: '/api/company/v1/get-user-companies', headers: { authorization: `Bearer ${alice}` } })
        return answer.status === 200 ? Date.now() : undefined
      })
      const restoreMs = firstOk - restoreStartedAt

      const found = new Set(await present(restoredPort, sinceOutage))
      const missing = sinceOutage.filter((write) => !found.has(write))
      const oldestMissing = Math.min(...missing.map((write) => write.acknowledgedAt!))
      const rpoMs = missing.length === 0 ? 0 : lostAt - oldestMissing
      const verify = await cluster.run('pgbackrest', ['--stanza=receivables', 'verify'])
      process.stderr.write(
        `restore drill: whole-cluster loss with archive_timeout ${ARCHIVE_TIMEOUT_S} s: ${missing.length} of ${sinceOutage.length} acknowledged writes missing, ` +
          `the oldest acknowledged ${missing.length ? rpoMs : 0} ms before the loss (RPO); first 2xx ${restoreMs} ms after the restore started (RTO)\n`,
      )
      // Nothing older than archive_timeout (plus the push's own time on a loaded machine) is lost.
      expect(rpoMs).toBeLessThanOrEqual(ARCHIVE_TIMEOUT_S * 1000 + 10_000)
      expect(written.length).toBeGreaterThan(missing.length)
      expect(duringOutage.filter((write) => !found.has(write))).toEqual([])
      // A small database: its restore, recovery and the service's start, generously bounded on a loaded machine.
      expect(restoreMs).toBeLessThan(120_000)
      expect(verify.code, verify.output).toBe(0)
    }, 180_000)
  },
)

import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import eventLoopLag from 'prom-client/lib/metrics/eventLoopLag.js'
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js'
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js'
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js'
import processCpuTotal from 'prom-client/lib/metrics/processCpuTotal.js'
import processHandles from 'prom-client/lib/metrics/processHandles.js'
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js'
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js'
import processRequests from 'prom-client/lib/metrics/processRequests.js'
import processResources from 'prom-client/lib/metrics/processResources.js'
import processStartTime from 'prom-client/lib/metrics/processStartTime.js'
import version from 'prom-client/lib/metrics/version.js'
import type { ConcurrencyObserver } from '../lib/concurrency-limit.js'
import type { BackupStatus } from './backup-status.js'

/**
 * The service's Prometheus metrics, with prom-client (the ecosystem's client: exposition format,
 * histogram semantics and the process/event-loop collectors are its job, not ours). One registry per
 * app, so that several apps in one process (the tests) do not share series. No label ever holds a
 * personal or secret value: routes are patterns, statuses classes, outcomes fixed words.
 */

/** The database pool as pg.Pool exposes it. */
export interface PoolGauges {
  totalCount: number
  idleCount: number
  waitingCount: number
}

/** A replica as src/db/replicas.ts keeps it. */
export interface ReplicaGauges {
  readonly name: string
  readonly up: boolean
  readonly lagSeconds: number
}

type StatusClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx'
const STATUS_CLASSES: readonly StatusClass[] = ['1xx', '2xx', '3xx', '4xx', '5xx']

/** Seconds; a read takes a few milliseconds, a login a few tens, a slow dependency up to the timeouts. */
const REQUEST_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const WAIT_BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

/** An observation of one request's duration, pre-bound to its labels. */
type Observe = (seconds: number) => void

export class ServiceMetrics {
  readonly registry = new Registry()
  private readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer a request, by method, route pattern and status class; its _count is the request count.',
    labelNames: ['method', 'route', 'status_class'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  })
  /**
   * Bound observers per `method route`, one per status class, made on a route's first request:
   * prom-client's `labels()` validates and copies its arguments, which a request need not pay for.
   */
  private readonly observers = new Map<string, Observe[]>()

  readonly webhookDeliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'E-signature webhook deliveries by outcome (applied, duplicate, unmatched, ignored, rejected).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  })
  readonly refreshOutcomes = new Counter({
    name: 'refresh_token_rotations_total',
    help: 'Refresh requests by outcome: rotated, retried (a spent token came back within REFRESH_REUSE_GRACE; its unused successor issued again), replay_revoked (a spent token came back; its family revoked), rejected.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  })
  readonly loginThrottle = new Counter({
    name: 'login_throttle_decisions_total',
    help: 'Login attempts let through to the password check (allowed) or refused with 429 (throttled).',
    labelNames: ['decision'] as const,
    registers: [this.registry],
  })
  /** The alert on database 503s needs them apart from the other 5xx (deploy/prometheus/alerts.yml). */
  readonly unavailableResponses = new Counter({
    name: 'service_unavailable_responses_total',
    help: 'Requests answered 503 by cause: database (unreachable, stalled or misconfigured), read_only (the database refuses writes: a failover), handler_timeout, hash_queue_full.',
    labelNames: ['cause'] as const,
    registers: [this.registry],
  })
  /** A gateway missing from TRUST_PROXY shows here (deploy/prometheus/alerts.yml, UntrustedForwardedFor). */
  readonly untrustedForwardedFor = new Counter({
    name: 'untrusted_forwarded_for_requests_total',
    help: "Requests carrying X-Forwarded-For from a peer TRUST_PROXY does not trust: their client address is the peer's (behind a gateway missing from TRUST_PROXY, every client is the gateway).",
    registers: [this.registry],
  })
  /** The in-memory login counters are full: too small for the traffic, or a flood of fresh keys. */
  readonly counterEvictions = new Counter({
    name: 'login_counter_evictions_total',
    help: "Entries the in-memory login counters evicted when full, by kind: counter (below its limit), blocked (at its limit), familiar (a familiar place's mark).",
    labelNames: ['kind'] as const,
    registers: [this.registry],
  })
  /** Writes done beside an answer (after it is sent), whose failure never changes it: a failure is logged and counted here. */
  readonly sideWriteFailures = new Counter({
    name: 'side_write_failures_total',
    help: 'Side writes (done after the answer, best effort) that failed, by write: presence (chat presence of route 6).',
    labelNames: ['write'] as const,
    registers: [this.registry],
  })
  private readonly hashRejections = new Counter({
    name: 'password_hash_rejections_total',
    help: 'Password hashes refused at once (503) because the hashing queue was full.',
    registers: [this.registry],
  })
  private readonly hashWait = new Histogram({
    name: 'password_hash_queue_wait_seconds',
    help: 'Time a password hash waited for a hashing thread.',
    buckets: WAIT_BUCKETS,
    registers: [this.registry],
  })
  private readonly poolAcquire = new Histogram({
    name: 'db_pool_acquire_duration_seconds',
    help: 'Time to get a database connection from the pool.',
    buckets: WAIT_BUCKETS,
    registers: [this.registry],
  })

  /**
   * Every outcome's series at 0 from the start (prom-client's `labels()` alone exports nothing until
   * an increment): rate() misses a series' first increment, and an alert's selector finds nothing.
   */
  constructor() {
    for (const outcome of ['applied', 'duplicate', 'unmatched', 'ignored', 'rejected'] as const) this.webhookDeliveries.labels(outcome).inc(0)
    for (const outcome of ['rotated', 'retried', 'replay_revoked', 'rejected'] as const) this.refreshOutcomes.labels(outcome).inc(0)
    for (const decision of ['allowed', 'throttled'] as const) this.loginThrottle.labels(decision).inc(0)
    for (const cause of ['database', 'read_only', 'handler_timeout', 'hash_queue_full'] as const) this.unavailableResponses.labels(cause).inc(0)
    this.sideWriteFailures.labels('presence').inc(0)
  }

  /** Records one answered request; `route` is the route's pattern, undefined when no route matched. */
  observeRequest(method: string, route: string | undefined, statusCode: number, milliseconds: number): void {
    const key = `${method} ${route ?? ''}`
    let byClass = this.observers.get(key)
    if (byClass === undefined) {
      // Unknown paths share one label: a scanner's URLs must not make series.
      const routeLabel = route ?? 'unmatched'
      // Unknown methods too (a client may send any token as its method).
      const methodLabel = route === undefined && !KNOWN_METHODS.has(method) ? 'other' : method
      byClass = STATUS_CLASSES.map((statusClass) => {
        const child = this.requestDuration.labels(methodLabel, routeLabel, statusClass)
        return (seconds: number) => child.observe(seconds)
      })
      // The 5xx series exists from the route's first request: the alerts' error ratio (and rate()
      // of its first 5xx) needs it there before the first error.
      this.requestDuration.zero({ method: methodLabel, route: routeLabel, status_class: '5xx' })
      this.observers.set(key, byClass)
    }
    const index = Math.floor(statusCode / 100) - 1
    byClass[index >= 0 && index < 5 ? index : 4]!(milliseconds / 1000)
  }

  /** Hooks for the password-hashing queue (src/auth/passwords.ts) and its depth, read at each scrape. */
  passwordHashing(depth: () => number): ConcurrencyObserver {
    new Gauge({
      name: 'password_hash_queue_depth',
      help: 'Password hashes waiting for a hashing thread.',
      registers: [this.registry],
      collect() {
        this.set(depth())
      },
    })
    return {
      onRejected: () => this.hashRejections.inc(),
      onStart: (waitedSeconds) => this.hashWait.observe(waitedSeconds),
    }
  }

  /** The pool's connections, read at each scrape; returns the observer of each acquisition's time. */
  databasePool(pool: PoolGauges): (seconds: number) => void {
    new Gauge({
      name: 'db_pool_connections',
      help: 'Database connections held by the pool, by state (total, idle).',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        this.labels('total').set(pool.totalCount)
        this.labels('idle').set(pool.idleCount)
      },
    })
    new Gauge({
      name: 'db_pool_waiting_clients',
      help: 'Queries waiting for a free database connection.',
      registers: [this.registry],
      collect() {
        this.set(pool.waitingCount)
      },
    })
    return (seconds) => this.poolAcquire.observe(seconds)
  }

  /**
   * Where the reads' statements ran (DATABASE_REPLICA_URLS): `target` a replica's host:port or
   * `primary`, `reason` why (replica; no_replica within the bound; own_write, the caller's write not
   * yet replayed; revoked, a change that took the caller's access away not yet replayed;
   * no_position, the store of positions failed; fallback, the replica failed the read;
   * confirm, a replica's "not found" checked on the primary). Absent without replicas.
   */
  replicaReads(replicas: readonly ReplicaGauges[]): (target: string, reason: string) => void {
    const reads = new Counter({
      name: 'db_reads_total',
      help: "Reads' statements by target (a replica's host:port, or primary) and reason (replica, no_replica, own_write, revoked, no_position, fallback, confirm).",
      labelNames: ['target', 'reason'] as const,
      registers: [this.registry],
    })
    for (const reason of ['no_replica', 'own_write', 'revoked', 'no_position', 'fallback', 'confirm']) reads.labels('primary', reason).inc(0)
    for (const replica of replicas) reads.labels(replica.name, 'replica').inc(0)
    new Gauge({
      name: 'db_replica_up',
      help: 'Whether a replica answered its last poll as a streaming replica (1) or is down, promoted away or in back-off (0).',
      labelNames: ['replica'] as const,
      registers: [this.registry],
      collect() {
        for (const replica of replicas) this.labels(replica.name).set(replica.up ? 1 : 0)
      },
    })
    new Gauge({
      name: 'db_replica_lag_seconds',
      help: "A replica's staleness at its last poll: how long ago the primary was where the replica has replayed to (to a second).",
      labelNames: ['replica'] as const,
      registers: [this.registry],
      collect() {
        for (const replica of replicas) this.labels(replica.name).set(replica.lagSeconds)
      },
    })
    const bound = new Map<string, { inc(): void }>()
    return (target, reason) => {
      const key = `${target} ${reason}`
      let child = bound.get(key)
      if (!child) bound.set(key, (child = reads.labels(target, reason)))
      child.inc()
    }
  }

  /**
   * The primary's WAL archiving and backups (src/observability/backup-status.ts), read at a scrape at
   * most every `maxAgeMs` and within `timeoutMs`: a failed or slow read keeps the last values (and a
   * scrape never fails), so several instances cost the database one small query each per interval.
   */
  backupStatus(read: () => Promise<BackupStatus>, options = { maxAgeMs: 10_000, timeoutMs: 1_000 }): void {
    let last: BackupStatus | undefined
    let readAt = 0
    let pending: Promise<void> | undefined
    const refresh = async () => {
      if (Date.now() - readAt < options.maxAgeMs) return
      pending ??= (async () => {
        let timer: NodeJS.Timeout | undefined
        const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), options.timeoutMs)))
        try {
          const status = await Promise.race([read(), timeout])
          if (status) [last, readAt] = [status, Date.now()]
        } catch {
          // The database unreachable: DatabaseUnavailable's business; the last values stay.
        } finally {
          clearTimeout(timer)
          pending = undefined
        }
      })()
      await pending
    }
    const gauge = (name: string, help: string, value: (status: BackupStatus) => number | null) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        async collect() {
          await refresh()
          const current = last && value(last)
          if (current === null || current === undefined) this.reset()
          else this.set(current)
        },
      })
    gauge(
      'db_wal_archive_archived_count',
      "WAL segments archive_command pushed since the statistics' reset (pg_stat_archiver).",
      (s) => s.archivedCount,
    )
    gauge('db_wal_archive_failed_count', "Failed pushes of WAL segments since the statistics' reset (pg_stat_archiver).", (s) => s.failedCount)
    gauge(
      'db_wal_archive_last_archived_timestamp_seconds',
      'When archive_command last pushed a WAL segment (pg_stat_archiver).',
      (s) => s.lastArchivedAt,
    )
    gauge('db_wal_archive_last_failed_timestamp_seconds', 'When a push of a WAL segment last failed (pg_stat_archiver).', (s) => s.lastFailedAt)
    gauge(
      'db_backup_last_success_timestamp_seconds',
      'When the newest backup that deploy/pgbackrest/backup.sh recorded (backup.runs) ended.',
      (s) => s.lastBackupAt,
    )
  }

  /**
   * Process metrics (CPU, memory, heap, handles) and event-loop lag: only for a process that serves
   * them. prom-client's own collectors, all those of its collectDefaultMetrics but the GC one: its
   * perf_hooks observer of every collection cost route 9 several percent of its CPU in
   * bench:compare (bench/RESULTS.md), as much as all the rest of the metrics.
   */
  collectProcessMetrics(): void {
    const config = { eventLoopMonitoringPrecision: 20 }
    for (const collector of PROCESS_COLLECTORS) collector(this.registry, config)
  }
}

type Collector = (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void

/** prom-client's default collectors (lib/defaultMetrics.js) less `gc`. */
const PROCESS_COLLECTORS: Collector[] = [
  processCpuTotal,
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  processMaxFileDescriptors,
  eventLoopLag,
  ...(typeof process.getActiveResourcesInfo === 'function' ? [processResources] : []),
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
]

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

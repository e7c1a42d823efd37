import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import type { Kysely } from 'kysely'
import type { Database, Db } from '../../db/types.js'
import { openReplicaSet, type Replica, type ReplicaSet } from '../db/replicas.js'
import { MemoryWritePositions, RedisWritePositions, type WritePositions } from '../db/write-positions.js'

/**
 * Where a read runs, and why (docs/decisions.md, "Reads on replicas"). The one place of the rule:
 * - only a GET or HEAD's admission and data may come from a streaming replica (DATABASE_REPLICA_URLS);
 *   a write's admission stays on the primary;
 * - a replica only while up and within DATABASE_REPLICA_MAX_LAG at its last poll (src/db/replicas.ts
 *   measures; the bound is kept here);
 * - read-your-writes: after an authenticated write, the primary's WAL position is kept for its user
 *   (in Redis with REDIS_URL, shared by the fleet; src/db/write-positions.ts), and their reads go to
 *   a replica only once it has replayed past it;
 * - a refusal a replica gives (a principal or membership not found, perhaps only not yet replayed)
 *   is confirmed on the primary, and a read that fails on a replica runs again on the primary;
 * - every read is counted by target and reason (`db_reads_total`).
 * The route constructs (./routes.ts) call `readsOf` for their admission and a write's onSend.
 */
declare module 'fastify' {
  interface FastifyInstance {
    replicaReads: ReplicaReads
  }
}

/** Why a read went where it went; `replica` when it went to one. */
type ReadReason = 'replica' | 'no_replica' | 'own_write' | 'no_position' | 'fallback' | 'confirm'

/** Counts one read by target (a replica's name, or `primary`) and reason (src/observability/metrics.ts). */
export type CountRead = (target: string, reason: ReadReason) => void

/** GET and HEAD: their admission and data may come from a replica. */
const isRead = (method: string | string[]): boolean => (Array.isArray(method) ? method : [method]).every((one) => one === 'GET' || one === 'HEAD')

/**
 * Read-your-writes: once a write's answer is final (its transaction, a keyed one included,
 * committed), the primary's WAL position is kept for its user, before the caller has it.
 */
function recordWritePosition(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  return request.server.replicaReads.recordWrite(request, reply).then(() => payload)
}

/**
 * A route's reads by its method: `run` its admission's statement (on a replica when a read may
 * use one; `admitted` tells a conclusive answer from a refusal to confirm), and the onSend hooks
 * a write declares last (after a keyed request's commit): its WAL position kept.
 */
export function readsOf(method: string | string[]) {
  const onReplica = isRead(method)
  return {
    run<T>(request: FastifyRequest, read: (db: Db) => Promise<T>, admitted: (found: T) => boolean): Promise<T> {
      return onReplica ? request.server.replicaReads.run(request, read, admitted) : read(request.server.db)
    },
    onSend: onReplica ? [] : [recordWritePosition],
  }
}

export interface ReplicaReadsOptions {
  set: ReplicaSet
  positions: WritePositions
  maxLagMs: number
  count: CountRead
}

/** The reads of one app: on the primary alone without replicas, else by the rule above. */
export class ReplicaReads {
  private next = 0

  constructor(
    private readonly primary: Kysely<Database>,
    private readonly replicas?: ReplicaReadsOptions,
  ) {}

  /**
   * Runs `read` on a replica when one may answer this caller, else on the primary. A replica that
   * fails the read costs the request nothing: the read runs again on the primary. An answer
   * `conclusive` rejects is asked of the primary.
   */
  async run<T>(request: FastifyRequest, read: (db: Db) => Promise<T>, conclusive: (result: T) => boolean = () => true): Promise<T> {
    if (!this.replicas) return read(this.primary)
    const { set, count } = this.replicas
    // No replica to use: the primary, without a lookup of the caller's position.
    if (!this.usable()) return this.onPrimary(read, 'no_replica')
    let after: bigint | undefined
    try {
      after = await this.positionOf(request)
    } catch (error) {
      request.log.warn({ err: error }, 'replicas: the write positions could not be read; reading on the primary')
      return this.onPrimary(read, 'no_position')
    }
    const { replica, reason } = this.choose(after)
    if (!replica) return this.onPrimary(read, reason)
    let result
    try {
      result = await read(replica.db)
    } catch (error) {
      set.failed(replica)
      request.log.warn({ err: error, replica: replica.name }, 'replicas: a read failed on a replica; reading on the primary')
      return this.onPrimary(read, 'fallback')
    }
    count(replica.name, 'replica')
    return conclusive(result) ? result : this.onPrimary(read, 'confirm')
  }

  /**
   * After a write's answer is final (its transaction committed), before the caller has it: keeps
   * the primary's WAL position for the caller's user. A failure is logged: the next reads may then miss it.
   */
  async recordWrite(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const userId = request.tokenClaims?.user_id
    if (!this.replicas || reply.statusCode >= 400 || !userId) return
    try {
      await this.replicas.positions.record(userId, await this.replicas.set.primaryPosition())
    } catch (error) {
      request.log.warn({ err: error }, "replicas: this write's position could not be recorded; the caller's next reads may miss it")
    }
  }

  /** Polls the replicas' lag from the app's start (the first reads may then use them). */
  async start(): Promise<void> {
    await this.replicas?.set.start()
  }

  async close(): Promise<void> {
    await this.replicas?.set.stop()
  }

  /** The WAL position a read of this caller must see; undefined: none recent. Throws when it cannot tell. */
  private async positionOf(request: FastifyRequest): Promise<bigint | undefined> {
    const userId = request.tokenClaims?.user_id
    return userId === undefined ? undefined : this.replicas!.positions.get(userId)
  }

  private onPrimary<T>(read: (db: Db) => Promise<T>, reason: ReadReason): Promise<T> {
    this.replicas?.count('primary', reason)
    return read(this.primary)
  }

  /**
   * A replica to read from, round robin among those up, within the bound, and (for a caller who
   * wrote) past `after`; undefined: the primary, with the reason.
   */
  private choose(after: bigint | undefined): { replica: Replica | undefined; reason: ReadReason } {
    const { replicas } = this.replicas!.set
    let fresh = false
    for (let tried = 0; tried < replicas.length; tried++) {
      const replica = replicas[this.next++ % replicas.length]!
      if (!this.takesReads(replica)) continue
      fresh = true
      if (after === undefined || replica.replayLsn >= after) return { replica, reason: 'replica' }
    }
    return { replica: undefined, reason: fresh ? 'own_write' : 'no_replica' }
  }

  /** Whether any replica may take reads now, before asking where the caller's writes stand. */
  private usable(): boolean {
    return this.replicas!.set.replicas.some((replica) => this.takesReads(replica))
  }

  /** Up, and within DATABASE_REPLICA_MAX_LAG at the last poll. */
  private takesReads(replica: Replica): boolean {
    return replica.up && replica.lagSeconds <= this.replicas!.maxLagMs / 1000
  }
}

export interface OpenReplicaReadsOptions {
  primary: Kysely<Database>
  /** DATABASE_REPLICA_URLS; none: every read on the primary. */
  urls: readonly string[]
  /** A pool like the primary's for a replica's URL. */
  open: (url: string) => Kysely<Database>
  maxLagMs: number
  /** REDIS_URL's connection: the write positions shared by the fleet; else this instance's memory. */
  redis: () => Promise<Redis | undefined>
  log: FastifyBaseLogger
  metrics: (replicas: readonly Replica[]) => CountRead
}

/** The app's reads: the replicas, polled for their lag, and where each caller's last write stands. */
export async function openReplicaReads(options: OpenReplicaReadsOptions): Promise<ReplicaReads> {
  if (options.urls.length === 0) return new ReplicaReads(options.primary)
  const set = openReplicaSet(options.primary, options.urls, options.open, {
    maxLagMs: options.maxLagMs,
    // Once per outage: back-off spaces the polls of a replica that stays down.
    onPollError: (replica, error) => {
      if (replica.failures === 1) options.log.warn({ err: error, replica: replica.name }, 'replicas: a replica is down; its reads go elsewhere')
    },
  })
  // Past the bound (and a few polls), every replica a read may use has replayed the position.
  const ttlMs = options.maxLagMs + 10_000
  const shared = await options.redis()
  const positions = shared ? new RedisWritePositions(shared, ttlMs) : new MemoryWritePositions(ttlMs)
  return new ReplicaReads(options.primary, { set, positions, maxLagMs: options.maxLagMs, count: options.metrics(set.replicas) })
}

import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import type { Kysely } from 'kysely'
import type { Database, Db } from '../../db/types.js'
import { AccessNotices } from '../db/access-notices.js'
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
 * - revocation at once: a commit that takes access away names the users it affects (the triggers of
 *   db/migrations/0014; src/db/access-notices.ts listens), and their reads go to the primary until a
 *   replica has replayed it, on every instance (each listens); a notice missed while the listener was
 *   down is covered by waiting, once it listens again, for a replica past the primary's position then;
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
type ReadReason = 'replica' | 'no_replica' | 'own_write' | 'revoked' | 'no_position' | 'fallback' | 'confirm'

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
  /** The primary's URL, for the access notices' connection (none: revocations are not heard of; tests of the rule alone). */
  primaryUrl: string | undefined
  log: FastifyBaseLogger
}

/** A user whose access a commit took away: the primary's position after it (undefined while asked), kept until `until`. */
interface Revocation {
  lsn: bigint | undefined
  until: number
}

/** The reads of one app: on the primary alone without replicas, else by the rule above. */
export class ReplicaReads {
  private next = 0
  private readonly revocations = new Map<string, Revocation>()
  /** What every read's replica must have replayed: the primary's position when the notices were heard again (undefined while asked). */
  private floor: bigint | undefined = 0n
  private listened = false
  private readonly notices: AccessNotices | undefined

  constructor(
    private readonly primary: Kysely<Database>,
    private readonly replicas?: ReplicaReadsOptions,
  ) {
    if (!replicas?.primaryUrl) return
    this.notices = new AccessNotices({
      url: replicas.primaryUrl,
      onRevoked: (userId) => this.revoked(userId),
      onListening: () => this.listening(),
      onError: (error) => replicas.log.warn({ err: error }, 'replicas: the access notices are not heard; listening again'),
    })
  }

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
    // Every revocation committed before this read heard of first (one primary round trip, shared by the reads meanwhile).
    const heard = this.notices?.heardAll()
    let after: bigint | undefined
    try {
      after = await this.positionOf(request)
    } catch (error) {
      request.log.warn({ err: error }, 'replicas: the write positions could not be read; reading on the primary')
      return this.onPrimary(read, 'no_position')
    }
    // Not heard (not listening, or the primary slower than the fence's bound): a revocation may be
    // unheard, so the primary answers, as when the write positions cannot be read.
    if ((await heard) === false) return this.onPrimary(read, 'no_position')
    const revoked = this.revokedAfter(request.tokenClaims?.user_id)
    if (revoked === undefined) return this.onPrimary(read, 'revoked')
    const behind = after === undefined || revoked >= after ? 'revoked' : 'own_write'
    const { replica, reason } = this.choose(after === undefined || revoked > after ? revoked : after, behind)
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

  /** Polls the replicas' lag and listens for revocations from the app's start (the first reads may then use replicas). */
  async start(): Promise<void> {
    await Promise.all([this.replicas?.set.start(), this.notices?.start()])
  }

  async close(): Promise<void> {
    await Promise.all([this.replicas?.set.stop(), this.notices?.stop()])
  }

  /**
   * What a replica must have replayed to answer this user: past their access's last revocation
   * and the floor (0n when neither); undefined while that position is still being asked.
   */
  private revokedAfter(userId: string | undefined): bigint | undefined {
    const revocation = userId === undefined ? undefined : this.revocations.get(userId)
    if (this.floor === undefined || (revocation && revocation.until > Date.now() && revocation.lsn === undefined)) return undefined
    const lsn = revocation && revocation.until > Date.now() ? revocation.lsn! : 0n
    return lsn > this.floor ? lsn : this.floor
  }

  /** A notice: the user's reads on the primary at once, then on a replica past the primary's position now (after the commit). */
  private revoked(userId: string): void {
    const { set, maxLagMs, log } = this.replicas!
    const now = Date.now()
    // Past the bound (and a few polls), every replica a read may use has replayed it.
    const revocation: Revocation = { lsn: undefined, until: now + maxLagMs + 10_000 }
    this.revocations.set(userId, revocation)
    if (this.revocations.size > 10_000) for (const [key, entry] of this.revocations) if (entry.until <= now) this.revocations.delete(key)
    set.primaryPosition().then(
      (lsn) => (revocation.lsn = lsn),
      (error: unknown) => log.warn({ err: error }, "replicas: a revocation's position could not be read; the user's reads stay on the primary"),
    )
  }

  /** Listening: the first time from the start; again after a loss, every read waits for a replica past what was committed meanwhile. */
  private listening(): void {
    if (!this.listened) return void (this.listened = true)
    this.floor = undefined
    this.replicas!.set.primaryPosition().then(
      (lsn) => (this.floor = lsn),
      () => (this.floor = 0n),
    )
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
  private choose(after: bigint | undefined, behind: ReadReason): { replica: Replica | undefined; reason: ReadReason } {
    const { replicas } = this.replicas!.set
    let fresh = false
    for (let tried = 0; tried < replicas.length; tried++) {
      const replica = replicas[this.next++ % replicas.length]!
      if (!this.takesReads(replica)) continue
      fresh = true
      if (after === undefined || replica.replayLsn >= after) return { replica, reason: 'replica' }
    }
    return { replica: undefined, reason: fresh ? behind : 'no_replica' }
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
  /** DATABASE_URL: the access notices' connection. */
  primaryUrl: string | undefined
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
  const { maxLagMs, primaryUrl, log } = options
  return new ReplicaReads(options.primary, { set, positions, maxLagMs, count: options.metrics(set.replicas), primaryUrl, log })
}

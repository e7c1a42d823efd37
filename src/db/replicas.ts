import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/types.js'

/** A WAL position (`16/B374D848`) as a number that compares. */
export function parseLsn(text: string): bigint {
  const [high, low] = text.split('/')
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)
}

/** One streaming replica as the service last saw it. */
export interface Replica {
  /** `host:port` of its URL (never its credentials): the metrics' label. */
  readonly name: string
  readonly db: Kysely<Database>
  /** Answered the last poll, in recovery (a replica promoted away is down: its data has left the primary's). */
  up: boolean
  /** Replayed WAL position at the last poll; a lower bound of where it is now. */
  replayLsn: bigint
  /** Seconds of staleness at the last poll (see `lagSeconds`). */
  lagSeconds: number
  /** Polls failed in a row, for the back-off; and when the next poll may try it. */
  failures: number
  retryAt: number
}

export interface ReplicaSetOptions {
  /** DATABASE_REPLICA_MAX_LAG: the primary's positions are kept a little longer (src/tenancy/replica-reads.ts holds reads to it). */
  maxLagMs: number
  /** How often lag is measured (not per request). */
  pollMs?: number
  /** The bound of one poll's statements. */
  pollTimeoutMs?: number
  /** Told of each poll's outcome (logs). */
  onPollError?: (replica: Replica, error: unknown) => void
}

const MAX_BACKOFF_MS = 30_000

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/**
 * The replicas, and how far behind each is (which may take a read: src/tenancy/replica-reads.ts). Once a second (not per request) it reads
 * the primary's WAL position and each replica's replayed one. A replica's lag is measured on the
 * primary's positions as this instance saw them: the time since the primary was where the replica
 * now is. So a stalled replica (its WAL receiver cut off, nothing left to replay locally) ages like
 * a delayed one, no clocks are compared, and with the primary unreachable a replica that has
 * replayed all it was sent stays usable. A replica that fails a poll or a read is down until a poll
 * succeeds, tried again with back-off (1 s doubling to 30 s).
 */
export class ReplicaSet {
  /** The primary's positions, oldest first, kept a little longer than the bound. */
  private readonly samples: { at: number; lsn: bigint }[] = []
  private timer: NodeJS.Timeout | undefined
  private polling: Promise<void> | undefined
  private readonly pollMs: number
  private readonly pollTimeoutMs: number

  constructor(
    private readonly primary: Kysely<Database>,
    readonly replicas: readonly Replica[],
    private readonly options: ReplicaSetOptions,
  ) {
    this.pollMs = options.pollMs ?? 1_000
    this.pollTimeoutMs = options.pollTimeoutMs ?? 1_000
  }

  /** Polls now, then every `pollMs`; resolves after the first poll so that the first reads may use replicas. */
  async start(): Promise<void> {
    await this.poll()
    this.timer = setInterval(() => void this.poll(), this.pollMs)
    this.timer.unref()
  }

  /** Stops polling and closes the replicas' pools. */
  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.polling
    await Promise.all(this.replicas.map((replica) => replica.db.destroy()))
  }

  /** A read failed on `replica`: no more reads there until a poll finds it well. */
  failed(replica: Replica): void {
    if (!replica.up) return
    replica.up = false
    replica.failures = 1
    replica.retryAt = Date.now() + this.pollMs
  }

  /** The primary's WAL position now (after a write has committed: a position past it). */
  async primaryPosition(): Promise<bigint> {
    const { rows } = await sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`.execute(this.primary)
    return parseLsn(rows[0]!.lsn)
  }

  private poll(): Promise<void> {
    // One poll at a time: a stalled one must not pile up behind itself.
    this.polling ??= this.pollOnce().finally(() => (this.polling = undefined))
    return this.polling
  }

  private async pollOnce(): Promise<void> {
    const now = Date.now()
    const primary = withTimeout(this.primaryPosition(), this.pollTimeoutMs).catch(() => undefined)
    const due = this.replicas.filter((replica) => replica.retryAt <= now)
    const positions = due.map((replica) =>
      withTimeout(
        sql<{ recovery: boolean; replay: string | null }>`SELECT pg_is_in_recovery() AS recovery, pg_last_wal_replay_lsn()::text AS replay`.execute(
          replica.db,
        ),
        this.pollTimeoutMs,
      ).then(
        ({ rows }) => rows[0]!,
        (error: unknown) => error as Error,
      ),
    )
    const lsn = await primary
    if (lsn !== undefined) this.sample(now, lsn)
    for (const [index, answer] of (await Promise.all(positions)).entries()) {
      const replica = due[index]!
      if (answer instanceof Error || !answer.recovery || answer.replay === null) {
        replica.up = false
        replica.failures += 1
        replica.retryAt = Date.now() + Math.min(MAX_BACKOFF_MS, this.pollMs * 2 ** (replica.failures - 1))
        this.options.onPollError?.(replica, answer instanceof Error ? answer : new Error('not a streaming replica (promoted, or not in recovery)'))
        continue
      }
      replica.replayLsn = parseLsn(answer.replay)
      replica.lagSeconds = this.lagOf(replica.replayLsn, now)
      replica.up = true
      replica.failures = 0
      replica.retryAt = 0
    }
  }

  private sample(at: number, lsn: bigint): void {
    this.samples.push({ at, lsn })
    // Kept past the bound, so that a replica further behind than every sample is known to be beyond it.
    const keepFrom = at - this.options.maxLagMs - 2 * this.pollMs
    while (this.samples.length > 2 && this.samples[1]!.at < keepFrom) this.samples.shift()
  }

  /**
   * Seconds of staleness: what the replica lacks was committed after the newest sample it has
   * replayed, so it is at least as old as the sample after that (to a poll's precision); 0 when it
   * has replayed the newest position seen.
   */
  private lagOf(replayed: bigint, now: number): number {
    for (let index = this.samples.length - 1; index >= 0; index--) {
      const sample = this.samples[index]!
      if (sample.lsn <= replayed) return index === this.samples.length - 1 ? 0 : (now - this.samples[index + 1]!.at) / 1000
    }
    if (this.samples.length === 0) return 0 // the primary never answered: nothing to measure against
    // Behind every position kept (they span the bound once the service has run that long): beyond it.
    return Math.max(now - this.samples[0]!.at, this.options.maxLagMs) / 1000 + this.pollMs / 1000
  }
}

/** `host:port` of a replica's URL: no credentials in a label or a log line; a second URL of the same host and port is told apart by its place. */
function replicaNames(urls: readonly string[]): string[] {
  const names: string[] = []
  for (const [index, url] of urls.entries()) {
    let name = `replica${index + 1}`
    try {
      const parsed = new URL(url)
      name = `${parsed.hostname}:${parsed.port || '5432'}`
    } catch {
      // not a URL (a socket path): its place names it
    }
    names.push(names.includes(name) ? `${name}#${index + 1}` : name)
  }
  return names
}

/** The replicas of DATABASE_REPLICA_URLS, each a pool like the primary's (`open` makes it), polled from `start`. */
export function openReplicaSet(
  primary: Kysely<Database>,
  urls: readonly string[],
  open: (url: string) => Kysely<Database>,
  options: ReplicaSetOptions,
): ReplicaSet {
  const names = replicaNames(urls)
  const replicas = urls.map((url, index): Replica => ({
    name: names[index]!,
    db: open(url),
    up: false,
    replayLsn: 0n,
    lagSeconds: 0,
    failures: 0,
    retryAt: 0,
  }))
  return new ReplicaSet(primary, replicas, options)
}

import type { CounterLimit, CounterStore, Release, ReleaseListener, Reservation, Settlement } from '../../lib/counter-store.js'

/** What an eviction took: a counter below its limit (noise), a counter at its limit, or a familiar place's mark. */
export type EvictedKind = 'counter' | 'blocked' | 'familiar'

export type EvictionListener = (kind: EvictedKind, count: number) => void

/** Share of the keys evicted at once when full, so that a flood pays one scan per hundredth of the store. */
const EVICTED_SHARE = 0.01

/**
 * One process's counters; bounded so that a flood of distinct keys cannot exhaust memory. When full
 * it evicts by value, not age (issue 42 item 9): counters below their limit first, the lowest
 * counts and the oldest first; a counter at its limit last. Marks (familiar places) apart: the
 * least renewed first, and among those the newest, so that a flood of new places cannot push out
 * the ones accounts keep coming back from.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly failures = new Map<string, { count: number; limit: number; expiresAt: number }>()
  /** Per key, the attempts in flight and when their lease ends; an entry only while one is. */
  private readonly inFlight = new Map<string, Map<string, number>>()
  /** Marks, when they end and how many times they were made. */
  private readonly marks = new Map<string, { endsAt: number; renewals: number }>()
  private readonly listeners: ReleaseListener[] = []
  private readonly evictionListeners: EvictionListener[] = []
  private releases = 0

  constructor(private readonly maxKeys = 100_000) {}

  /** Evictions are worth a metric and a log line: they mean the store is too small for the traffic (or a flood). */
  onEvicted(listener: EvictionListener): void {
    this.evictionListeners.push(listener)
  }

  // No await between the check and the counting: atomic within the event loop.
  async reserve(attempt: string, counters: CounterLimit[], leaseMs: number): Promise<Reservation> {
    let failedMs = 0
    let busy: string | undefined
    for (const { key, limit } of counters) {
      const failures = this.unexpired(key)
      if (failures && failures.count >= limit) failedMs = Math.max(failedMs, failures.expiresAt - Date.now(), 1)
      else if ((failures?.count ?? 0) + this.flying(key) >= limit) busy ??= key
    }
    if (failedMs > 0) return { outcome: 'blocked', waitMs: failedMs }
    if (busy !== undefined) return { outcome: 'busy', key: busy, version: this.releases }
    for (const { key } of counters) {
      const attempts = this.inFlight.get(key) ?? new Map<string, number>()
      this.inFlight.set(key, attempts.set(attempt, Date.now() + leaseMs))
    }
    return { outcome: 'reserved' }
  }

  async settle(attempt: string, counters: (CounterLimit & { settlement: Settlement })[], windowMs: number): Promise<void> {
    for (const { key, limit, settlement } of counters) {
      const attempts = this.inFlight.get(key)
      attempts?.delete(attempt)
      if (attempts?.size === 0) this.inFlight.delete(key)
      if (settlement === 'failed') this.countFailure(key, limit, windowMs)
      else if (settlement === 'cleared') this.failures.delete(key)
    }
    for (const { key, limit, settlement } of counters) {
      const release = this.releaseOf(key, limit, settlement)
      if (release === undefined) continue
      this.releases += 1
      for (const listener of this.listeners) listener.released(key, release, this.releases)
    }
  }

  /** Failures filling the counter, or the places free once one was given back (a failure frees none). */
  private releaseOf(key: string, limit: number, settlement: Settlement): Release | undefined {
    const failures = this.unexpired(key)?.count ?? 0
    if (failures >= limit) return 'blocked'
    if (settlement === 'failed') return undefined
    const free = limit - failures - this.flying(key)
    return free > 0 ? free : undefined
  }

  // Every release is heard at once, in this process.
  listen(listener: ReleaseListener): void {
    this.listeners.push(listener)
  }

  async watch(): Promise<boolean> {
    return true
  }

  unwatch(): void {}

  live(): boolean {
    return true
  }

  async close(): Promise<void> {}

  clear(): void {
    this.failures.clear()
    this.inFlight.clear()
    this.marks.clear()
  }

  async isMarked(key: string): Promise<boolean> {
    const mark = this.marks.get(key)
    if (mark !== undefined && mark.endsAt <= Date.now()) this.marks.delete(key)
    return mark !== undefined && mark.endsAt > Date.now()
  }

  async mark(key: string, ttlMs: number): Promise<void> {
    const mark = this.marks.get(key)
    const renewals = mark !== undefined && mark.endsAt > Date.now() ? mark.renewals + 1 : 1
    this.marks.delete(key)
    if (this.marks.size >= this.maxKeys) this.evictMarks()
    this.marks.set(key, { endsAt: Date.now() + ttlMs, renewals })
  }

  private countFailure(key: string, limit: number, windowMs: number) {
    const entry = this.unexpired(key)
    if (entry) {
      entry.count += 1
      entry.limit = limit
      return
    }
    if (this.failures.size >= this.maxKeys) this.evictFailures()
    this.failures.set(key, { count: 1, limit, expiresAt: Date.now() + windowMs })
  }

  /** Attempts in flight on `key` whose lease has not ended. */
  private flying(key: string): number {
    const attempts = this.inFlight.get(key)
    if (!attempts) return 0
    const now = Date.now()
    for (const [attempt, leaseEnd] of attempts) if (leaseEnd <= now) attempts.delete(attempt)
    if (attempts.size === 0) this.inFlight.delete(key)
    return attempts.size
  }

  // reserve's check, counting nothing.
  async blockedMs(counters: CounterLimit[]): Promise<number> {
    let blockedMs = 0
    for (const { key, limit } of counters) {
      const entry = this.unexpired(key)
      if (entry && entry.count >= limit) blockedMs = Math.max(blockedMs, entry.expiresAt - Date.now(), 1)
    }
    return blockedMs
  }

  private unexpired(key: string) {
    const entry = this.failures.get(key)
    if (entry && entry.expiresAt <= Date.now()) {
      this.failures.delete(key)
      return undefined
    }
    return entry
  }

  /** Expired counters, then the least worth keeping: below their limit before at it, low counts and old ones first. */
  private evictFailures() {
    const now = Date.now()
    for (const [key, entry] of this.failures) if (entry.expiresAt <= now) this.failures.delete(key)
    const excess = this.failures.size - this.maxKeys + Math.max(1, Math.floor(this.maxKeys * EVICTED_SHARE))
    if (excess <= 0) return
    const worth = ([, entry]: [string, { count: number; limit: number; expiresAt: number }]) => [
      entry.count >= entry.limit ? 1 : 0,
      entry.count,
      entry.expiresAt,
    ]
    const evicted = leastWorth([...this.failures], worth, excess)
    const blocked = evicted.filter(([, entry]) => entry.count >= entry.limit).length
    for (const [key] of evicted) this.failures.delete(key)
    this.report('counter', evicted.length - blocked)
    this.report('blocked', blocked)
  }

  /** Expired marks, then the least renewed, newest first: the places accounts return to outlive a flood of new ones. */
  private evictMarks() {
    const now = Date.now()
    for (const [key, mark] of this.marks) if (mark.endsAt <= now) this.marks.delete(key)
    const excess = this.marks.size - this.maxKeys + Math.max(1, Math.floor(this.maxKeys * EVICTED_SHARE))
    if (excess <= 0) return
    const evicted = leastWorth([...this.marks], ([, mark]) => [mark.renewals, -mark.endsAt], excess)
    for (const [key] of evicted) this.marks.delete(key)
    this.report('familiar', evicted.length)
  }

  private report(kind: EvictedKind, count: number) {
    if (count > 0) for (const listener of this.evictionListeners) listener(kind, count)
  }
}

/** The `count` entries of least worth, compared element by element. */
function leastWorth<T>(entries: T[], worth: (entry: T) => number[], count: number): T[] {
  const ranked = entries.map((entry) => ({ entry, rank: worth(entry) }))
  ranked.sort((a, b) => {
    for (let index = 0; index < a.rank.length; index++) if (a.rank[index] !== b.rank[index]) return a.rank[index]! - b.rank[index]!
    return 0
  })
  return ranked.slice(0, count).map(({ entry }) => entry)
}

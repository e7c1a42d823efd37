import type { CounterLimit, CounterStore, Release, ReleaseListener, Reservation, Settlement } from '../../lib/counter-store.js'

/** One process's counters; bounded so that a flood of distinct keys cannot exhaust memory. */
export class MemoryCounterStore implements CounterStore {
  private readonly failures = new Map<string, { count: number; expiresAt: number }>()
  /** Per key, the attempts in flight and when their lease ends; an entry only while one is. */
  private readonly inFlight = new Map<string, Map<string, number>>()
  /** Marks and when they end, the latest made last, so that the oldest go first when full. */
  private readonly marks = new Map<string, number>()
  private readonly listeners: ReleaseListener[] = []
  private releases = 0

  constructor(private readonly maxKeys = 100_000) {}

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
    for (const { key, settlement } of counters) {
      const attempts = this.inFlight.get(key)
      attempts?.delete(attempt)
      if (attempts?.size === 0) this.inFlight.delete(key)
      if (settlement === 'failed') this.countFailure(key, windowMs)
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
    const endsAt = this.marks.get(key)
    if (endsAt !== undefined && endsAt <= Date.now()) this.marks.delete(key)
    return endsAt !== undefined && endsAt > Date.now()
  }

  async mark(key: string, ttlMs: number): Promise<void> {
    this.marks.delete(key)
    if (this.marks.size >= this.maxKeys) this.marks.delete(this.marks.keys().next().value!)
    this.marks.set(key, Date.now() + ttlMs)
  }

  private countFailure(key: string, windowMs: number) {
    const entry = this.unexpired(key)
    if (entry) {
      entry.count += 1
      return
    }
    if (this.failures.size >= this.maxKeys) this.evictExpiredOrOldest()
    this.failures.set(key, { count: 1, expiresAt: Date.now() + windowMs })
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

  private evictExpiredOrOldest() {
    const now = Date.now()
    for (const [key, entry] of this.failures) if (entry.expiresAt <= now) this.failures.delete(key)
    const oldest = this.failures.keys().next()
    if (this.failures.size >= this.maxKeys && !oldest.done) this.failures.delete(oldest.value)
  }
}

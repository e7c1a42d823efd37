/** A counter and the count at which it refuses. */
export interface CounterLimit {
  key: string
  limit: number
}

/** What an attempt's end does to one counter: one failure counted, its failures cleared, or neither. */
export type Settlement = 'failed' | 'cleared' | 'returned'

/**
 * `reserve`'s answer: the attempt is in flight; or failures fill a counter for `waitMs` more; or
 * failures and attempts in flight fill the counter `key`, and its attempts' ends may free a place
 * (`version`: the store's count of releases then, so that a waiter knows which came after).
 */
export type Reservation = { outcome: 'reserved' } | { outcome: 'blocked'; waitMs: number } | { outcome: 'busy'; key: string; version: number }

/** What a settlement left on a counter, for the attempts waiting on it: places free, or failures filling it. */
export type Release = number | 'blocked'

export interface ReleaseListener {
  /** `version`: the store's count of releases, this one included. */
  released(key: string, release: Release, version: number): void
  /** Releases may have gone unheard (the connection that hears them was lost). */
  interrupted(): void
}

/** Releases on the counters, of every instance sharing the store: waiters are woken by them instead of polling. */
export interface ReleaseFeed {
  listen(listener: ReleaseListener): void
  /** From its resolution on, the releases on `key` reach the listeners; false: they may not (polling it is). */
  watch(key: string): Promise<boolean>
  unwatch(key: string): void
  /** Whether the releases of the keys watched are being heard now. */
  live(): boolean
}

/**
 * Per counter, failures in a fixed window that starts at the first one, and the attempts in flight
 * (each a lease, so that an instance that dies mid-attempt does not hold its place for good). An
 * attempt is put in flight before its password is checked, so that a burst of concurrent guesses
 * cannot all pass the check first; a failure turns its place into a failure, a success gives it back.
 */
export interface CounterStore extends ReleaseFeed {
  /**
   * Atomically: when every counter's failures plus attempts in flight are below its limit, puts
   * `attempt` in flight on each for at most `leaseMs`. Otherwise takes nothing and answers the
   * longest wait of the counters its failures fill (at least 1 ms), else the first counter its
   * failures and attempts in flight fill.
   */
  reserve(attempt: string, counters: CounterLimit[], leaseMs: number, windowMs: number): Promise<Reservation>
  /**
   * Takes `attempt` out of flight on each counter and applies its settlement; then each counter's
   * release (places now free after a place given back, or failures filling it) goes to the listeners.
   */
  settle(attempt: string, counters: (CounterLimit & { settlement: Settlement })[], windowMs: number): Promise<void>
  /** Without counting: the milliseconds until the counters' failures let one more attempt through, 0 when none is at its limit. */
  blockedMs(counters: CounterLimit[]): Promise<number>
  /** Whether `key` was marked less than its TTL ago (a familiar place: src/auth/throttle/familiar-places.ts). */
  isMarked(key: string): Promise<boolean>
  /** Marks `key` for `ttlMs` from now, a mark already there included. */
  mark(key: string, ttlMs: number): Promise<void>
  /** Closes what the store opened itself (not a connection it was given). */
  close(): Promise<void>
}

/** A counter and the count at which it refuses. */
export interface CounterLimit {
  key: string
  limit: number
}

/** What an attempt's end does to one counter: one failure counted, its failures cleared, or neither. */
export type Settlement = 'failed' | 'cleared' | 'returned'

/** `reserve`'s answer when no counter is at its limit by failures alone, only with attempts in flight. */
export const IN_FLIGHT = -1

/**
 * Per counter, failures in a fixed window that starts at the first one, and the attempts in flight
 * (each a lease, so that an instance that dies mid-attempt does not hold its place for good). An
 * attempt is put in flight before its password is checked, so that a burst of concurrent guesses
 * cannot all pass the check first; a failure turns its place into a failure, a success gives it back.
 */
export interface CounterStore {
  /**
   * Atomically: when every counter's failures plus attempts in flight are below its limit, puts
   * `attempt` in flight on each for at most `leaseMs` and returns 0. Otherwise takes nothing and
   * returns the milliseconds until the failures let one more attempt through (at least 1), or
   * IN_FLIGHT when failures alone are below every limit.
   */
  reserve(attempt: string, counters: CounterLimit[], leaseMs: number, windowMs: number): Promise<number>
  /** Takes `attempt` out of flight on each counter and applies its settlement. */
  settle(attempt: string, counters: { key: string; settlement: Settlement }[], windowMs: number): Promise<void>
  /** Without counting: the milliseconds until the counters' failures let one more attempt through, 0 when none is at its limit. */
  blockedMs(counters: CounterLimit[]): Promise<number>
  /** Whether `key` was marked less than its TTL ago (a familiar place: src/auth/throttle/familiar-places.ts). */
  isMarked(key: string): Promise<boolean>
  /** Marks `key` for `ttlMs` from now, a mark already there included. */
  mark(key: string, ttlMs: number): Promise<void>
}

import type { CounterLimit, CounterStore, Settlement } from './counter-store.js'

/**
 * Redis first; while Redis fails, this process's own counters, so that an outage of the cache
 * neither locks every user out of login nor lifts the limit altogether.
 */
export class FallbackCounterStore implements CounterStore {
  constructor(
    private readonly primary: CounterStore,
    private readonly fallback: CounterStore,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Attempts this process's counters took while Redis failed: they end there too. */
  private readonly onFallback = new Set<string>()

  async reserve(attempt: string, counters: CounterLimit[], leaseMs: number, windowMs: number): Promise<number> {
    try {
      return await this.primary.reserve(attempt, counters, leaseMs, windowMs)
    } catch (error) {
      this.onError(error)
      const result = await this.fallback.reserve(attempt, counters, leaseMs, windowMs)
      if (result === 0) this.onFallback.add(attempt)
      return result
    }
  }

  settle(attempt: string, counters: { key: string; settlement: Settlement }[], windowMs: number) {
    if (this.onFallback.delete(attempt)) return this.fallback.settle(attempt, counters, windowMs)
    return this.attempt((store) => store.settle(attempt, counters, windowMs))
  }

  blockedMs(counters: CounterLimit[]) {
    return this.attempt((store) => store.blockedMs(counters))
  }

  isMarked(key: string) {
    return this.attempt((store) => store.isMarked(key))
  }

  /** In both: while Redis fails, this process still knows the places it saw logins from. */
  async mark(key: string, ttlMs: number): Promise<void> {
    await this.fallback.mark(key, ttlMs)
    try {
      await this.primary.mark(key, ttlMs)
    } catch (error) {
      this.onError(error)
    }
  }

  private async attempt<T>(operation: (store: CounterStore) => Promise<T>): Promise<T> {
    try {
      return await operation(this.primary)
    } catch (error) {
      this.onError(error)
      return operation(this.fallback)
    }
  }
}

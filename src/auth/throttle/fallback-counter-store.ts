import type { CounterLimit, CounterStore, ReleaseListener, Reservation, Settlement } from '../../lib/counter-store.js'

/** After Redis failed, this process's counters alone for so long: a login does not wait for a Redis that is down at each step. */
const PRIMARY_RETRY_MS = 1000

/**
 * Redis first; while Redis fails, this process's own counters, so that an outage of the cache
 * neither locks every user out of login nor lifts the limit altogether.
 */
export class FallbackCounterStore implements CounterStore {
  private primaryDownUntil = 0

  constructor(
    private readonly primary: CounterStore,
    private readonly fallback: CounterStore,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Attempts this process's counters took while Redis failed: they end there too. */
  private readonly onFallback = new Set<string>()

  async reserve(attempt: string, counters: CounterLimit[], leaseMs: number, windowMs: number): Promise<Reservation> {
    try {
      if (!this.primaryDown()) return await this.primary.reserve(attempt, counters, leaseMs, windowMs)
    } catch (error) {
      this.failed(error)
    }
    const result = await this.fallback.reserve(attempt, counters, leaseMs, windowMs)
    if (result.outcome === 'reserved') this.onFallback.add(attempt)
    return result
  }

  settle(attempt: string, counters: (CounterLimit & { settlement: Settlement })[], windowMs: number) {
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
      if (!this.primaryDown()) await this.primary.mark(key, ttlMs)
    } catch (error) {
      this.failed(error)
    }
  }

  listen(listener: ReleaseListener): void {
    this.primary.listen(listener)
    this.fallback.listen(listener)
  }

  /** Heard when Redis's releases are: this process's own always are. */
  async watch(key: string): Promise<boolean> {
    const [primary] = await Promise.all([
      this.primaryDown()
        ? false
        : this.primary.watch(key).catch((error: unknown) => {
            this.failed(error)
            return false
          }),
      this.fallback.watch(key),
    ])
    return primary
  }

  unwatch(key: string): void {
    this.primary.unwatch(key)
    this.fallback.unwatch(key)
  }

  live(): boolean {
    return this.primary.live()
  }

  async close(): Promise<void> {
    await Promise.all([this.primary.close(), this.fallback.close()])
  }

  private async attempt<T>(operation: (store: CounterStore) => Promise<T>): Promise<T> {
    try {
      if (!this.primaryDown()) return await operation(this.primary)
    } catch (error) {
      this.failed(error)
    }
    return operation(this.fallback)
  }

  private primaryDown(): boolean {
    return performance.now() < this.primaryDownUntil
  }

  private failed(error: unknown): void {
    this.primaryDownUntil = performance.now() + PRIMARY_RETRY_MS
    this.onError(error)
  }
}

/** Hooks for metrics: a task refused because the queue was full, and a task that got its slot. */
export interface ConcurrencyObserver {
  onRejected?(): void
  onStart?(waitedSeconds: number): void
}

export interface ConcurrencyLimitOptions {
  /** Tasks allowed to wait for a slot; one more is refused at once. Unbounded when left out. */
  maxQueued?: number
  observer?: ConcurrencyObserver
}

/** Thrown by `run` when every slot is taken and the queue is full: the caller answers "busy" at once. */
export class ConcurrencyLimitFull extends Error {
  override name = 'ConcurrencyLimitFull'
}

/**
 * Runs at most `limit` tasks at once; the others wait their turn, first come first served, up to
 * `maxQueued` of them, so that a flood is refused at once instead of making everyone wait.
 */
export class ConcurrencyLimit {
  private running = 0
  private readonly waiting: (() => void)[] = []
  private readonly maxQueued: number
  private readonly observer: ConcurrencyObserver

  constructor(
    private readonly limit: number,
    options: ConcurrencyLimitOptions = {},
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`)
    const maxQueued = options.maxQueued ?? Number.POSITIVE_INFINITY
    if (!(maxQueued >= 0) || (Number.isFinite(maxQueued) && !Number.isInteger(maxQueued))) {
      throw new RangeError(`maxQueued must be a non-negative integer, got ${maxQueued}`)
    }
    this.maxQueued = maxQueued
    this.observer = options.observer ?? {}
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    const queuedAt = performance.now()
    if (this.running < this.limit) this.running += 1
    else if (this.waiting.length >= this.maxQueued) {
      this.observer.onRejected?.()
      throw new ConcurrencyLimitFull(`${this.limit} running and ${this.waiting.length} waiting`)
    } else await new Promise<void>((resolve) => this.waiting.push(resolve)) // the finisher hands over its slot
    try {
      this.observer.onStart?.((performance.now() - queuedAt) / 1000)
      return await task()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.running -= 1
    }
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.waiting.length
  }
}

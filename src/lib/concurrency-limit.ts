/** Runs at most `limit` tasks at once; the others wait their turn, first come first served. */
export class ConcurrencyLimit {
  private running = 0
  private readonly waiting: (() => void)[] = []

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`)
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running < this.limit) this.running += 1
    else await new Promise<void>((resolve) => this.waiting.push(resolve)) // the finisher hands over its slot
    try {
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

export interface CoalescerOptions {
  /** Most items one batch takes. */
  maxBatch: number
  /** Most batches running at once; further items wait and join the next batch. */
  maxInFlight: number
  /**
   * Whether to retry each item of a failed batch on its own (default: always), so that one bad item
   * fails only itself. Say no for failures that would fail every item alike, such as an outage.
   */
  retryAlone?: (error: unknown) => boolean
}

interface Waiting<Item, Result> {
  item: Item
  resolve: (result: Result) => void
  reject: (error: unknown) => void
}

/**
 * Runs items submitted one by one in batches: while the batches in flight run, newly submitted items
 * wait and then go together in the next one. An item submitted when nothing waits starts a batch of
 * its own at once, so a lone item waits for nothing; under load, batches grow by themselves and the
 * fixed cost of a batch (round trips, a commit) is shared.
 */
export class Coalescer<Item, Result> {
  private readonly waiting: Waiting<Item, Result>[] = []
  private inFlight = 0

  /** `run` returns one result per item, in the items' order. */
  constructor(
    private readonly run: (items: Item[]) => Promise<Result[]>,
    private readonly options: CoalescerOptions,
  ) {}

  submit(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject })
      this.startBatches()
    })
  }

  private startBatches(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.options.maxBatch)
      this.inFlight += 1
      void this.settle(batch).finally(() => {
        this.inFlight -= 1
        this.startBatches()
      })
    }
  }

  private async settle(batch: Waiting<Item, Result>[]): Promise<void> {
    try {
      const results = await this.run(batch.map((entry) => entry.item))
      batch.forEach((entry, index) => entry.resolve(results[index] as Result))
    } catch (error) {
      const retryAlone = batch.length > 1 && (this.options.retryAlone?.(error) ?? true)
      if (!retryAlone) {
        for (const entry of batch) entry.reject(error)
        return
      }
      // One after another: the batch failed as a whole, and its items may touch the same rows.
      for (const entry of batch) {
        try {
          const [result] = await this.run([entry.item])
          entry.resolve(result as Result)
        } catch (aloneError) {
          entry.reject(aloneError)
        }
      }
    }
  }
}

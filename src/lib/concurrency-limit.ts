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
 * Where a task stands in the queue: a higher `priority` is served first, and when the queue is full
 * takes the place of the newest waiter of a lower one; among equals, a full queue gives the
 * newcomer the place of the newest waiter of the source (its network, its account) holding the
 * most places, if that holds more than the newcomer's would, so that no source fills the queue.
 */
export interface Admission {
  priority: number
  sources: readonly string[]
}

const UNRANKED: Admission = { priority: 0, sources: [] }

interface Waiter {
  admission: Admission
  /** The finisher hands over its slot. */
  start(): void
  /** Its place went to a newcomer ahead of it. */
  refuse(error: ConcurrencyLimitFull): void
}

/**
 * Runs at most `limit` tasks at once; the others wait their turn, by priority then first come first
 * served, up to `maxQueued` of them, so that a flood is refused at once instead of making everyone
 * wait. A full queue is shared fairly (Admission).
 */
export class ConcurrencyLimit {
  private running = 0
  private readonly waiting: Waiter[] = []
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

  async run<T>(task: () => Promise<T>, admission: Admission = UNRANKED): Promise<T> {
    const queuedAt = performance.now()
    if (this.running < this.limit) this.running += 1
    else await this.enqueue(admission)
    try {
      this.observer.onStart?.((performance.now() - queuedAt) / 1000)
      return await task()
    } finally {
      const next = this.takeNext()
      if (next) next.start()
      else this.running -= 1
    }
  }

  private enqueue(admission: Admission): Promise<void> {
    if (this.waiting.length >= this.maxQueued) {
      const victim = this.victimFor(admission)
      this.observer.onRejected?.()
      if (victim === undefined) return Promise.reject(new ConcurrencyLimitFull(`${this.limit} running and ${this.waiting.length} waiting`))
      this.waiting.splice(this.waiting.indexOf(victim), 1)
      victim.refuse(new ConcurrencyLimitFull(`${this.limit} running; its place went to a task ahead of it`))
    }
    return new Promise<void>((start, refuse) => this.waiting.push({ admission, start, refuse }))
  }

  /** The first of the highest priority. */
  private takeNext(): Waiter | undefined {
    let best = -1
    for (let index = 0; index < this.waiting.length; index++) {
      if (best === -1 || this.waiting[index]!.admission.priority > this.waiting[best]!.admission.priority) best = index
    }
    return best === -1 ? undefined : this.waiting.splice(best, 1)[0]
  }

  /** Whose place a newcomer takes in a full queue, if anyone's (Admission). */
  private victimFor(admission: Admission): Waiter | undefined {
    const newest = (waiters: Waiter[]) => waiters[waiters.length - 1]
    const lowest = Math.min(...this.waiting.map((waiter) => waiter.admission.priority))
    if (lowest < admission.priority) return newest(this.waiting.filter((waiter) => waiter.admission.priority === lowest))
    const peers = this.waiting.filter((waiter) => waiter.admission.priority === admission.priority)
    const held = new Map<string, number>()
    for (const waiter of peers) for (const source of waiter.admission.sources) held.set(source, (held.get(source) ?? 0) + 1)
    const newcomerWouldHold = Math.max(0, ...admission.sources.map((source) => held.get(source) ?? 0)) + 1
    let heaviest: string | undefined
    for (const [source, count] of held) if (count > (heaviest === undefined ? 0 : held.get(heaviest)!)) heaviest = source
    if (heaviest === undefined || held.get(heaviest)! <= newcomerWouldHold) return undefined
    return newest(peers.filter((waiter) => waiter.admission.sources.includes(heaviest)))
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.waiting.length
  }
}

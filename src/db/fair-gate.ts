/** What pg says when no connection came in time: src/db/errors.ts maps it to a 503. */
const TIMED_OUT = 'timeout exceeded when trying to connect'

interface Waiter {
  admit(release: () => void): void
  timer: NodeJS.Timeout | undefined
}

/**
 * The pool's connections handed out in turn when all are taken: waiters queue per share (a
 * request's caller), and a freed connection goes to the waiting share that holds the fewest (of
 * equals, the one served longest ago), so that a caller with fifty requests waiting puts one of them,
 * not fifty, ahead of another caller's first. Free connections are taken at once, as from pg's own queue.
 */
export class FairGate {
  private inUse = 0
  private waiting = 0
  /** Each share's waiters, oldest first. */
  private readonly queues = new Map<string, Waiter[]>()
  /** Connections each share holds now. */
  private readonly held = new Map<string, number>()
  /** When each share holding or waiting was last given a connection (a count of turns). */
  private readonly lastTurn = new Map<string, number>()
  private turns = 0

  /** `timeoutMs` as pg's connectionTimeoutMillis: how long a waiter waits (0: for ever). */
  constructor(
    private readonly capacity: number,
    private readonly timeoutMs: number,
  ) {}

  get waitingCount(): number {
    return this.waiting
  }

  /** A connection's place for `share`; its release function, to call once it goes back. */
  acquire(share: string): Promise<() => void> {
    if (this.inUse < this.capacity && this.waiting === 0) return Promise.resolve(this.take(share))
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        admit: resolve,
        timer:
          this.timeoutMs > 0
            ? setTimeout(() => {
                this.remove(share, waiter)
                reject(new Error(TIMED_OUT))
              }, this.timeoutMs)
            : undefined,
      }
      const queue = this.queues.get(share)
      if (queue) queue.push(waiter)
      else this.queues.set(share, [waiter])
      this.waiting += 1
    })
  }

  /** A connection's place taken by `share`; the function that gives it back, once. */
  private take(share: string): () => void {
    this.inUse += 1
    this.held.set(share, (this.held.get(share) ?? 0) + 1)
    this.lastTurn.set(share, ++this.turns)
    let released = false
    return () => {
      if (released) return
      released = true
      this.inUse -= 1
      const left = this.held.get(share)! - 1
      if (left > 0) this.held.set(share, left)
      else this.forget(share)
      this.admitNext()
    }
  }

  private admitNext(): void {
    while (this.inUse < this.capacity && this.waiting > 0) {
      const share = this.nextShare()
      const queue = this.queues.get(share)!
      const waiter = queue.shift()!
      this.queues.delete(share)
      if (queue.length > 0) this.queues.set(share, queue)
      this.waiting -= 1
      clearTimeout(waiter.timer)
      waiter.admit(this.take(share))
    }
  }

  /** The waiting share holding the fewest connections; of equals, the one served longest ago. */
  private nextShare(): string {
    let best = ''
    let [fewest, oldestTurn] = [Infinity, Infinity]
    for (const share of this.queues.keys()) {
      const held = this.held.get(share) ?? 0
      const turn = this.lastTurn.get(share) ?? 0
      if (held < fewest || (held === fewest && turn < oldestTurn)) [best, fewest, oldestTurn] = [share, held, turn]
    }
    return best
  }

  /** A share that neither holds nor waits: nothing kept of it. */
  private forget(share: string): void {
    this.held.delete(share)
    if (!this.queues.has(share)) this.lastTurn.delete(share)
  }

  private remove(share: string, waiter: Waiter): void {
    const queue = this.queues.get(share)
    const at = queue?.indexOf(waiter) ?? -1
    if (at < 0) return
    queue!.splice(at, 1)
    this.waiting -= 1
    if (queue!.length > 0) return
    this.queues.delete(share)
    if (!this.held.has(share)) this.lastTurn.delete(share)
  }
}

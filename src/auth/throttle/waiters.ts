import type { Release, ReleaseFeed, ReleaseListener } from '../../lib/counter-store.js'

/**
 * How often a waiter tries again while the releases of its key may go unheard (not yet subscribed,
 * Redis's subscription lost); heard, it sleeps until woken or until its wait is over.
 */
const UNHEARD_POLL_MS = 1000

/** A key stays watched this long after its last waiter left: a burst does not subscribe at each turn. */
const UNWATCH_AFTER_MS = 1000

/**
 * Why a waiter woke: a place may be its to take (it then says `looked`), failures fill the counter,
 * or time to look again.
 */
export type Wake = 'place' | 'blocked' | 'retry'

interface Watch {
  /** `heard`: the key's releases reach this instance; `unheard`: they may not. */
  state: 'pending' | 'heard' | 'unheard'
  ready: Promise<void>
  /** The version of the key's last release heard with places (or failures) left for a waiter still on its way. */
  lastRelease: number
  /** Places passed on when no one was in line: for the next waiters to come. */
  spare: number
  unwatchTimer?: NodeJS.Timeout | undefined
}

/**
 * Attempts of this instance waiting for a place on a counter, woken by the counter's releases
 * (from any instance, through the store's feed) in turn: as many as places were given back, or all
 * when failures fill it. Nothing polls while releases are heard.
 */
export class Waiters implements ReleaseListener {
  /** Per key, the waiters in the order they came. */
  private readonly queues = new Map<string, Set<(wake: Wake) => void>>()
  private readonly watches = new Map<string, Watch>()
  /**
   * Per key, this instance's waiters given a place and not yet back from taking it: a release's
   * count of places free includes theirs, which are not given twice.
   */
  private readonly claims = new Map<string, number>()

  constructor(private readonly feed: ReleaseFeed) {
    feed.listen(this)
  }

  released(key: string, release: Release, version: number): void {
    const queue = this.queues.get(key) ?? new Set()
    let left = release === 'blocked' ? Infinity : release - (this.claims.get(key) ?? 0)
    for (const wake of release === 'blocked' ? [...queue] : queue) {
      if (left <= 0) break
      if (release === 'blocked') wake('blocked')
      else this.givePlace(key, wake)
      left -= 1
    }
    // What is left is for the waiters whose reserve this release came after, on their way here.
    const watch = this.watches.get(key)
    if (watch && left > 0) watch.lastRelease = Math.max(watch.lastRelease, version)
  }

  interrupted(): void {
    for (const queue of [...this.queues.values()]) for (const wake of [...queue]) wake('retry')
  }

  /** A waiter given a place on `key` has looked: it took it (or found the key full), or not, and the next in line looks. */
  looked(key: string, passOn: boolean): void {
    const claims = (this.claims.get(key) ?? 1) - 1
    if (claims > 0) this.claims.set(key, claims)
    else this.claims.delete(key)
    if (passOn) this.passOn(key)
  }

  private passOn(key: string): void {
    const first = this.queues.get(key)?.values().next()
    if (first && !first.done) this.givePlace(key, first.value)
    else if (this.watches.has(key)) this.watches.get(key)!.spare += 1
  }

  private givePlace(key: string, wake: (reason: Wake) => void): void {
    this.claims.set(key, (this.claims.get(key) ?? 0) + 1)
    wake('place')
  }

  /**
   * Waits for a release on `key`, or `timeoutMs` (less while releases may go unheard). `since`:
   * the store's version of releases when it found the key full; later ones count.
   */
  wait(key: string, since: number, timeoutMs: number): Promise<Wake> {
    const watch = this.watch(key)
    return new Promise((resolve) => {
      const queue = this.queues.get(key) ?? new Set()
      this.queues.set(key, queue)
      let done = false
      const wake = (reason: Wake) => {
        if (done) return
        done = true
        clearTimeout(timer)
        queue.delete(wake)
        if (queue.size === 0) this.unwatchLater(key, queue)
        resolve(reason)
      }
      queue.add(wake)
      const endsAt = performance.now() + timeoutMs
      const sleep = () =>
        setTimeout(
          () => wake('retry'),
          watch.state === 'heard' && this.feed.live() ? endsAt - performance.now() : Math.min(UNHEARD_POLL_MS, endsAt - performance.now()),
        )
      let timer = sleep()
      if (watch.state === 'pending') {
        // Heard from then on, it need not look before woken.
        void watch.ready.then(() => {
          if (done) return
          clearTimeout(timer)
          timer = sleep()
        })
      } else if (watch.lastRelease > since || watch.spare > 0) {
        // A release heard since the reserve found the key full, or a place passed on to no one.
        if (watch.lastRelease <= since) watch.spare -= 1
        this.givePlace(key, wake)
      }
    })
  }

  private watch(key: string): Watch {
    const existing = this.watches.get(key)
    if (existing) {
      clearTimeout(existing.unwatchTimer)
      existing.unwatchTimer = undefined
      return existing
    }
    const watch: Watch = { state: 'pending', ready: Promise.resolve(), lastRelease: 0, spare: 0 }
    // Releases before the key was heard went by unseen: its first waiter looks, as if given a place
    // (taken, its release counts every place free and wakes as many; not taken, passed on).
    watch.ready = this.feed.watch(key).then(
      (heard) => void (watch.state = heard ? 'heard' : 'unheard'),
      () => void (watch.state = 'unheard'),
    )
    void watch.ready.then(() => this.passOn(key))
    this.watches.set(key, watch)
    return watch
  }

  private unwatchLater(key: string, queue: Set<unknown>): void {
    if (this.queues.get(key) === queue) this.queues.delete(key)
    const watch = this.watches.get(key)
    if (!watch) return
    clearTimeout(watch.unwatchTimer)
    watch.unwatchTimer = setTimeout(() => {
      if (this.queues.has(key) || this.watches.get(key) !== watch) return
      this.watches.delete(key)
      this.feed.unwatch(key)
    }, UNWATCH_AFTER_MS)
    watch.unwatchTimer.unref()
  }
}

import { describe, expect, it } from 'vitest'
import { Waiters, type Wake } from '../../src/auth/throttle/waiters.js'
import type { ReleaseFeed, ReleaseListener } from '../../src/lib/counter-store.js'

/*
 * The login throttle's waiters (src/auth/throttle/waiters.ts) on their own: who is woken by which
 * release, and when a waiter looks again by itself. The releases come from a feed the test drives,
 * as the counter stores deliver them (in process, or from Redis); the throttle's tests through
 * HTTP are login-burst, throttle-burst and login-wakeups.
 */

class TestFeed implements ReleaseFeed {
  listener: ReleaseListener | undefined
  /** Whether a watch is heard (Redis subscribed) or not (its releases may go unseen). */
  heard = true
  isLive = true
  readonly unwatched: string[] = []
  listen(listener: ReleaseListener): void {
    this.listener = listener
  }
  async watch(): Promise<boolean> {
    return this.heard
  }
  unwatch(key: string): void {
    this.unwatched.push(key)
  }
  live(): boolean {
    return this.isLive
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const STILL = 'still waiting'
/** What the wait resolved to within `ms`, or STILL. */
const within = (wait: Promise<Wake>, ms = 50) => Promise.race([wait, sleep(ms).then(() => STILL)])

function setUp() {
  const feed = new TestFeed()
  const waiters = new Waiters(feed)
  const release = (key: string, places: number | 'blocked', version: number) => feed.listener!.released(key, places, version)
  return { feed, waiters, release }
}

/** The first waiter on a new watch is given a place at once; it takes it. */
async function firstWaiterTakes(waiters: Waiters, key = 'k') {
  expect(await within(waiters.wait(key, 0, 5_000))).toBe('place')
  waiters.looked(key, false)
}

describe('waiters for a place on a counter', () => {
  it('the first waiter of a key looks at once (releases before the key was watched went unseen); the next waits for a release', async () => {
    const { waiters, release } = setUp()
    await firstWaiterTakes(waiters)
    const next = waiters.wait('k', 0, 5_000)
    expect(await within(next)).toBe(STILL)
    release('k', 1, 1)
    expect(await within(next)).toBe('place')
  })

  it('wakes as many waiters as places given back, in the order they came, and counts a place given once until it is looked at', async () => {
    const { waiters, release } = setUp()
    await firstWaiterTakes(waiters)
    const [second, third, fourth] = [waiters.wait('k', 0, 5_000), waiters.wait('k', 0, 5_000), waiters.wait('k', 0, 5_000)]
    release('k', 2, 1)
    expect(await Promise.all([within(second), within(third), within(fourth)])).toEqual(['place', 'place', STILL])
    // The same two places, told again before their waiters have looked: nobody more is woken.
    release('k', 2, 2)
    expect(await within(fourth)).toBe(STILL)
    waiters.looked('k', false)
    waiters.looked('k', false)
    release('k', 1, 3)
    expect(await within(fourth)).toBe('place')
  })

  it('wakes every waiter at once when failures fill the counter', async () => {
    const { waiters, release } = setUp()
    await firstWaiterTakes(waiters)
    const waiting = [waiters.wait('k', 0, 5_000), waiters.wait('k', 0, 5_000), waiters.wait('k', 0, 5_000)]
    release('k', 'blocked', 1)
    expect(await Promise.all(waiting.map((wait) => within(wait)))).toEqual(['blocked', 'blocked', 'blocked'])
  })

  it('passes a place not taken to the next in line', async () => {
    const { waiters, release } = setUp()
    await firstWaiterTakes(waiters)
    const [second, third] = [waiters.wait('k', 0, 5_000), waiters.wait('k', 0, 5_000)]
    release('k', 1, 1)
    expect(await Promise.all([within(second), within(third)])).toEqual(['place', STILL])
    waiters.looked('k', true)
    expect(await within(third)).toBe('place')
  })

  it('keeps a place passed on to no one for the next waiter, once', async () => {
    const { waiters } = setUp()
    expect(await within(waiters.wait('k', 0, 5_000))).toBe('place')
    waiters.looked('k', true)
    expect(await within(waiters.wait('k', 9, 5_000))).toBe('place')
    waiters.looked('k', false)
    expect(await within(waiters.wait('k', 9, 150), 400)).toBe('retry')
  })

  it('gives a place at once to a waiter whose reserve came before a release with places left for nobody', async () => {
    const { waiters, release } = setUp()
    await firstWaiterTakes(waiters)
    release('k', 2, 7)
    // Found the key full at version 6: the release of version 7 came after, its places are this waiter's.
    expect(await within(waiters.wait('k', 6, 5_000))).toBe('place')
    waiters.looked('k', false)
    // Found it full at version 7: that release is no news; it waits.
    expect(await within(waiters.wait('k', 7, 150), 400)).toBe('retry')
  })

  it('spends a kept place only on a waiter no release was news to', async () => {
    const { waiters, release } = setUp()
    expect(await within(waiters.wait('k', 0, 5_000))).toBe('place')
    waiters.looked('k', true) // passed on to no one: one place kept
    release('k', 1, 5) // with nobody in line
    // The release is news to a waiter that found the key full at 4: its place, the kept one stays.
    expect(await within(waiters.wait('k', 4, 5_000))).toBe('place')
    waiters.looked('k', false)
    // To one that found it full at 5 it is not: the kept place is its, and then none is left.
    expect(await within(waiters.wait('k', 5, 5_000))).toBe('place')
    waiters.looked('k', false)
    expect(await within(waiters.wait('k', 5, 150), 400)).toBe('retry')
  })

  it('keeps nothing of a release whose places all went to the waiters in line', async () => {
    const { waiters, release } = setUp()
    await firstWaiterTakes(waiters)
    const inLine = waiters.wait('k', 0, 5_000)
    release('k', 1, 8)
    expect(await within(inLine)).toBe('place')
    waiters.looked('k', false)
    expect(await within(waiters.wait('k', 7, 150), 400)).toBe('retry')
  })

  it('wakes every waiter of every key to look again when releases may have gone unheard', async () => {
    const { waiters } = setUp()
    await firstWaiterTakes(waiters, 'a')
    await firstWaiterTakes(waiters, 'b')
    const waiting = [waiters.wait('a', 0, 5_000), waiters.wait('b', 0, 5_000)]
    expect(await within(waiting[0]!)).toBe(STILL)
    waiters.interrupted()
    expect(await Promise.all(waiting.map((wait) => within(wait)))).toEqual(['retry', 'retry'])
  })

  it('looks again every second while the key is not heard (or the feed is not live), else only when its wait is over', async () => {
    for (const [heard, isLive] of [
      [false, true],
      [true, false],
    ]) {
      const { feed, waiters } = setUp()
      Object.assign(feed, { heard, isLive })
      await firstWaiterTakes(waiters)
      expect(await within(waiters.wait('k', 0, 10_000), 3_000)).toBe('retry')
    }
    const { waiters } = setUp()
    await firstWaiterTakes(waiters)
    expect(await within(waiters.wait('k', 0, 10_000), 1_500)).toBe(STILL)
  })

  it('stops watching a key a second after its last waiter left, not while one comes back within it', async () => {
    const { feed, waiters, release } = setUp()
    await firstWaiterTakes(waiters)
    await sleep(500)
    const again = waiters.wait('k', 0, 5_000)
    await sleep(700)
    expect(feed.unwatched).toEqual([])
    release('k', 1, 1)
    expect(await within(again)).toBe('place')
    waiters.looked('k', false)
    await sleep(1_200)
    expect(feed.unwatched).toEqual(['k'])
  })
})

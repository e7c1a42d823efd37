import { describe, expect, it } from 'vitest'
import { ConcurrencyLimit, ConcurrencyLimitFull } from '../../src/lib/concurrency-limit.js'

const deferred = () => {
  let resolve!: () => void
  let reject!: (error: Error) => void
  const promise = new Promise<void>((yes, no) => {
    resolve = yes
    reject = no
  })
  return { promise, resolve, reject }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe('ConcurrencyLimit', () => {
  it('runs at most `limit` tasks at once and starts the waiting ones in order', async () => {
    const limit = new ConcurrencyLimit(2)
    const gates = [deferred(), deferred(), deferred(), deferred()]
    const started: number[] = []
    const runs = gates.map((gate, index) =>
      limit.run(async () => {
        started.push(index)
        await gate.promise
        return index
      }),
    )
    await tick()
    expect(started).toEqual([0, 1])
    expect(limit.queued).toBe(2)
    gates[1]!.resolve()
    await tick()
    expect(started).toEqual([0, 1, 2])
    gates[0]!.resolve()
    gates[2]!.resolve()
    gates[3]!.resolve()
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3])
    expect(limit.queued).toBe(0)
  })

  it('frees the slot of a task that fails', async () => {
    const limit = new ConcurrencyLimit(1)
    await expect(limit.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    expect(await limit.run(async () => 'next')).toBe('next')
  })

  it('refuses a limit below one', () => {
    expect(() => new ConcurrencyLimit(0)).toThrow(RangeError)
  })

  it('refuses at once beyond maxQueued, and tells the observer', async () => {
    const events: string[] = []
    const limit = new ConcurrencyLimit(2, {
      maxQueued: 3,
      observer: { onRejected: () => events.push('rejected'), onStart: (waited) => events.push(waited >= 0 ? 'start' : 'bad') },
    })
    const gate = deferred()
    const runs = Array.from({ length: 8 }, () => limit.run(() => gate.promise))
    const settled = Promise.allSettled(runs)
    await tick()
    expect(limit.queued).toBe(3)
    gate.resolve()
    const outcomes = await settled
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(5)
    const refused = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected')
    expect(refused).toHaveLength(3)
    for (const outcome of refused) expect(outcome.reason).toBeInstanceOf(ConcurrencyLimitFull)
    expect(events.filter((event) => event === 'start')).toHaveLength(5)
    expect(events.filter((event) => event === 'rejected')).toHaveLength(3)
    // Room again once the queue has drained.
    expect(await limit.run(async () => 'again')).toBe('again')
  })
})

describe('ConcurrencyLimit, admission (issue 42 item 4)', () => {
  /** One task running, `maxQueued` places; each task waits on its own gate. */
  const busyLimit = async (maxQueued: number) => {
    const limit = new ConcurrencyLimit(1, { maxQueued })
    const gate = deferred()
    const first = limit.run(() => gate.promise)
    await tick()
    return { limit, release: () => gate.resolve(), first }
  }
  const settled = (run: Promise<unknown>) =>
    run.then(
      () => 'ran',
      (error: unknown) => (error instanceof ConcurrencyLimitFull ? 'refused' : 'failed'),
    )

  it('serves a higher priority first, and gives it the place of the newest lower one when full', async () => {
    const { limit, release, first } = await busyLimit(2)
    const order: string[] = []
    const task = (name: string) => async () => void order.push(name)
    const low1 = settled(limit.run(task('low1'), { priority: 0, sources: ['a'] }))
    const low2 = settled(limit.run(task('low2'), { priority: 0, sources: ['b'] }))
    const high = settled(limit.run(task('high'), { priority: 2, sources: ['c'] }))
    release()
    await first
    expect(await Promise.all([low1, low2, high])).toEqual(['ran', 'refused', 'ran'])
    expect(order).toEqual(['high', 'low1'])
  })

  it('refuses a newcomer of the source holding the most, and gives another source its place', async () => {
    const { limit, release, first } = await busyLimit(3)
    const runs = ['a', 'a', 'a', 'a', 'b'].map((source) => settled(limit.run(async () => undefined, { priority: 0, sources: [source] })))
    release()
    await first
    // The fourth 'a' finds the queue full and 'a' holding it all: refused; 'b' takes the newest 'a''s place.
    expect(await Promise.all(runs)).toEqual(['ran', 'ran', 'refused', 'refused', 'ran'])
  })
})

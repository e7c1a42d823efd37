import { describe, expect, it } from 'vitest'
import { ConcurrencyLimit } from '../../src/lib/concurrency-limit.js'

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
})

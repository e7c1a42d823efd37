import { describe, expect, it } from 'vitest'
import { Coalescer } from '../../src/lib/coalescer.js'

const tick = () => new Promise((resolve) => setImmediate(resolve))

/** A batch runner whose batches finish only when the test says so, recording what each got. */
function gatedRunner(handle: (items: number[]) => number[] = (items) => items.map((item) => item * 10)) {
  const batches: number[][] = []
  const gates: (() => void)[] = []
  const run = async (items: number[]) => {
    batches.push(items)
    await new Promise<void>((resolve) => gates.push(resolve))
    return handle(items)
  }
  const openNext = () => gates.shift()?.()
  return { batches, run, openNext }
}

describe('Coalescer', () => {
  it('starts a lone item at once, and batches the items that arrive while batches are in flight', async () => {
    const runner = gatedRunner()
    const coalescer = new Coalescer(runner.run, { maxBatch: 3, maxInFlight: 1 })
    const results = [1, 2, 3, 4, 5, 6].map((item) => coalescer.submit(item))
    await tick()
    expect(runner.batches).toEqual([[1]])
    runner.openNext()
    await tick()
    expect(runner.batches).toEqual([[1], [2, 3, 4]])
    runner.openNext()
    await tick()
    runner.openNext()
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40, 50, 60])
    expect(runner.batches).toEqual([[1], [2, 3, 4], [5, 6]])
  })

  it('runs up to maxInFlight batches at once', async () => {
    const runner = gatedRunner()
    const coalescer = new Coalescer(runner.run, { maxBatch: 10, maxInFlight: 2 })
    const results = [1, 2, 3, 4].map((item) => coalescer.submit(item))
    await tick()
    expect(runner.batches).toEqual([[1], [2]])
    runner.openNext()
    await tick()
    expect(runner.batches).toEqual([[1], [2], [3, 4]])
    runner.openNext()
    runner.openNext()
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40])
  })

  it('retries the items of a failed batch one by one, so that a bad item fails alone', async () => {
    const seen: number[][] = []
    const coalescer = new Coalescer(
      async (items: number[]) => {
        seen.push(items)
        if (items.includes(13)) throw new Error('unlucky')
        return items.map((item) => item * 10)
      },
      { maxBatch: 10, maxInFlight: 1 },
    )
    const first = coalescer.submit(1)
    const rest = [12, 13, 14].map((item) => coalescer.submit(item))
    const settled = await Promise.allSettled([first, ...rest])
    expect(settled.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message))).toEqual([
      10,
      120,
      'unlucky',
      140,
    ])
    expect(seen).toEqual([[1], [12, 13, 14], [12], [13], [14]])
  })

  it('fails the whole batch without retries when retryAlone says so', async () => {
    let runs = 0
    const coalescer = new Coalescer(
      async (): Promise<number[]> => {
        runs += 1
        await tick()
        throw new Error('database down')
      },
      { maxBatch: 10, maxInFlight: 1, retryAlone: () => false },
    )
    const settled = await Promise.allSettled([1, 2, 3].map((item) => coalescer.submit(item)))
    expect(settled.every((result) => result.status === 'rejected')).toBe(true)
    expect(runs).toBe(2) // [1], then [2, 3]; no retry of either
  })
})

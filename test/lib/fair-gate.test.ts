import { describe, expect, it } from 'vitest'
import { FairGate } from '../../src/db/fair-gate.js'

describe('FairGate: connections in turn per caller', () => {
  it('hands a freed connection to the caller holding the fewest, then to the one served longest ago', async () => {
    const gate = new FairGate(2, 0)
    const order: string[] = []
    const [bob1, bob2] = [await gate.acquire('bob'), await gate.acquire('bob')]
    const queued = ['bob', 'bob', 'carol', 'alice'].map((caller) => gate.acquire(caller).then((release) => (order.push(caller), release)))
    expect(gate.waitingCount).toBe(4)
    bob1()
    const carol = await queued[2]!
    bob2()
    const alice = await queued[3]!
    expect(order).toEqual(['carol', 'alice'])
    carol()
    alice()
    await Promise.all(queued)
    expect(order).toEqual(['carol', 'alice', 'bob', 'bob'])
    expect(gate.waitingCount).toBe(0)
  })

  it('takes a free connection at once, gives each place back once, and times a waiter out as pg does', async () => {
    const gate = new FairGate(1, 50)
    const release = await gate.acquire('bob')
    const waiting = gate.acquire('alice')
    await expect(waiting).rejects.toThrow('timeout exceeded when trying to connect')
    expect(gate.waitingCount).toBe(0)
    release()
    release()
    const first = await gate.acquire('a')
    const second = gate.acquire('b')
    expect(gate.waitingCount).toBe(1)
    first()
    ;(await second)()
    expect(gate.waitingCount).toBe(0)
  })
})

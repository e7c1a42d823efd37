import { randomUUID } from 'node:crypto'
import type { CounterLimit, CounterStore } from '../../lib/counter-store.js'
import { addressKey, DEFAULT_IPV6_PREFIX } from '../../lib/client-address.js'
import { throttled } from './throttled.js'

/** A wrong attempt is in flight only between its count and its settlement: a lease of seconds is ample. */
const LEASE_MS = 10_000

/**
 * Failures per client address (addressKey: an IPv6 /64 as one) at one door other than the login (the webhook's path secret), in the
 * same stores as the login counters. Only failures count, each atomically with its check against
 * the limit, so that a burst of wrong attempts stops at the limit; a right attempt counts nothing,
 * but an address at the limit is refused whatever it sends, else a right answer would still tell
 * itself apart from the wrong ones.
 */
export class AddressFailureLimit {
  constructor(
    private readonly store: CounterStore,
    private readonly door: string,
    private readonly limits: { perAddress: number; windowSeconds: number },
    private readonly ipv6Prefix = DEFAULT_IPV6_PREFIX,
  ) {}

  private counter(clientIp: string): CounterLimit {
    return { key: `${this.door}:address:${addressKey(clientIp, this.ipv6Prefix)}`, limit: this.limits.perAddress }
  }

  /** A right attempt: throws 429 with Retry-After when the address is at its limit, else counts nothing. */
  async admit(clientIp: string): Promise<void> {
    const blockedMs = await this.store.blockedMs([this.counter(clientIp)])
    if (blockedMs > 0) throw throttled(blockedMs)
  }

  /** A wrong attempt: counts it, or throws 429 with Retry-After when the address is already at its limit. */
  async fail(clientIp: string): Promise<void> {
    const counter = this.counter(clientIp)
    const windowMs = this.limits.windowSeconds * 1000
    const attempt = randomUUID()
    // Put in flight first, so that concurrent wrong attempts past the limit are refused, then counted.
    const result = await this.store.reserve(attempt, [counter], LEASE_MS, windowMs)
    if (result.outcome === 'busy') throw throttled(1000)
    if (result.outcome === 'blocked') throw throttled(result.waitMs)
    await this.store.settle(attempt, [{ ...counter, settlement: 'failed' }], windowMs)
  }
}

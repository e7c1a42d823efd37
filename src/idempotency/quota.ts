import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { CounterStore } from '../lib/counter-store.js'

export interface KeyQuotaLimits {
  /** New keys a caller may have kept per window (IDEMPOTENCY_KEYS_PER_CALLER). */
  perCaller: number
  windowSeconds: number
}

/** A new key's place, taken before its work runs: it counts once its answer is kept, else it is given back. */
export interface QuotaPlace {
  kept(): Promise<void>
  returned(): Promise<void>
}

export type QuotaAnswer = { granted: true; place: QuotaPlace } | { granted: false; waitMs: number }

/** A place held longer than any request runs (HANDLER_TIMEOUT) is given back by itself: an instance may die. */
const LEASE_MS = 60_000

/**
 * How many keys a caller (the key's scope: a user, or route 10's link) may have kept per window, so
 * that one busy token cannot grow `idempotency_keys` without bound. Counted in the login throttle's
 * store (src/lib/counter-store.ts), shared by the fleet through Redis: a kept key is a
 * "failure" of its window, a key in flight holds a place, so concurrent new keys cannot overshoot.
 */
export class KeyQuota {
  constructor(
    private readonly store: CounterStore,
    private readonly limits: KeyQuotaLimits,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** A place for a new key of `scope`, or how long until one frees. A store that fails lets the key through. */
  async take(scope: string): Promise<QuotaAnswer> {
    const attempt = randomUUID()
    const counters = [{ key: `idempotency-keys:${scope}`, limit: this.limits.perCaller }]
    const windowMs = this.limits.windowSeconds * 1000
    let reservation
    try {
      reservation = await this.store.reserve(attempt, counters, LEASE_MS, windowMs)
    } catch (error) {
      this.log.warn({ err: error }, 'idempotency: the key quota could not be counted; the key goes through')
      return { granted: true, place: { kept: async () => undefined, returned: async () => undefined } }
    }
    // Places held by keys in flight free within a request's time, or count: a second is the honest wait.
    if (reservation.outcome === 'busy') return { granted: false, waitMs: 1000 }
    if (reservation.outcome === 'blocked') return { granted: false, waitMs: reservation.waitMs }
    const settle = (settlement: 'failed' | 'returned') => async () => {
      try {
        await this.store.settle(
          attempt,
          counters.map((counter) => ({ ...counter, settlement })),
          windowMs,
        )
      } catch (error) {
        this.log.warn({ err: error }, 'idempotency: the key quota could not be settled')
      }
    }
    return { granted: true, place: { kept: settle('failed'), returned: settle('returned') } }
  }
}

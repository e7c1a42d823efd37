import type { FairnessSettings, RateClass } from '../config.js'
import type { QuotaState } from './headers.js'
import type { WindowStore } from './window-store.js'

/** A quota one request is charged to: its policy name (RateLimit-Policy) and its counter's key. */
export interface Subject {
  name: string
  key: string
}

/** The quotas after one request was counted, and, when one is spent, the milliseconds until it resets. */
export interface RateAnswer {
  states: QuotaState[]
  refusedMs: number
}

/**
 * Requests per window per principal (or address) and class of route, counted in the store (Redis
 * for the fleet, else this instance's memory): every quota of a request in one call.
 */
export class RateLimits {
  private readonly windowMs: number

  constructor(
    private readonly store: WindowStore,
    private readonly settings: FairnessSettings,
  ) {
    this.windowMs = settings.windowSeconds * 1000
  }

  async charge(rateClass: RateClass | 'rejected', subjects: readonly Subject[]): Promise<RateAnswer> {
    const limit = this.settings.rateLimits[rateClass]
    const counts = await this.store.charge(
      subjects.map(({ key }) => ({ key, limit })),
      this.windowMs,
    )
    let refusedMs = 0
    const states = counts.map(({ count, resetMs }, i) => {
      if (count > limit) refusedMs = Math.max(refusedMs, resetMs)
      const remaining = Math.max(0, limit - count)
      return { name: subjects[i]!.name, quota: limit, windowSeconds: this.settings.windowSeconds, remaining, resetSeconds: Math.ceil(resetMs / 1000) }
    })
    return { states, refusedMs }
  }
}

/**
 * Requests at once per principal, on this instance: a principal's requests in flight hold its
 * places until their answers end. Not shared by the fleet (that would cost a round trip at each
 * end): each instance guards its own event loop and pool, and the fleet allows instances × limit.
 */
export class InFlightLimits {
  private readonly held = new Map<string, number>()

  /** Takes a place on every key, or none when one is full (the key that is). */
  enter(keys: readonly string[], limit: number): string | undefined {
    const full = keys.find((key) => (this.held.get(key) ?? 0) >= limit)
    if (full !== undefined) return full
    for (const key of keys) this.held.set(key, (this.held.get(key) ?? 0) + 1)
    return undefined
  }

  leave(keys: readonly string[]): void {
    for (const key of keys) {
      const count = (this.held.get(key) ?? 1) - 1
      if (count <= 0) this.held.delete(key)
      else this.held.set(key, count)
    }
  }

  /** Principals holding places now. */
  get size(): number {
    return this.held.size
  }
}

/**
 * Recently seen (user, company role) pairs: a company role's quota is charged only by its own
 * members' requests, known before the database from an earlier admission, so that another
 * partner's token cannot spend it by naming the role in its URLs. Bounded, oldest out first.
 */
export class KnownMembers {
  private readonly seen = new Map<string, number>()

  constructor(
    private readonly ttlMs = 60_000,
    private readonly maxPairs = 50_000,
  ) {}

  remember(userId: string, companyRoleId: string): void {
    const pair = `${userId}:${companyRoleId}`
    this.seen.delete(pair)
    if (this.seen.size >= this.maxPairs) this.seen.delete(this.seen.keys().next().value!)
    this.seen.set(pair, performance.now() + this.ttlMs)
  }

  isMember(userId: string, companyRoleId: string): boolean {
    const until = this.seen.get(`${userId}:${companyRoleId}`)
    return until !== undefined && until > performance.now()
  }
}

/**
 * Addresses refused before any verification (too many 401s: no token, a forged one, a disabled
 * user's), each until its window resets; learnt from the store's count when a 401 is charged.
 */
export class RefusedAddresses {
  private readonly until = new Map<string, number>()

  constructor(private readonly maxAddresses = 100_000) {}

  refuse(address: string, forMs: number): void {
    if (this.until.size >= this.maxAddresses) this.until.delete(this.until.keys().next().value!)
    this.until.set(address, performance.now() + forMs)
  }

  /** Milliseconds the address stays refused, 0 when it is not. */
  refusedMs(address: string): number {
    const until = this.until.get(address)
    if (until === undefined) return 0
    const left = until - performance.now()
    if (left <= 0) this.until.delete(address)
    return Math.max(0, left)
  }
}

/**
 * Callers that send again before their `Retry-After` is over: a refusal of a request that arrived
 * after the caller's last refusal was answered is held back for the rest of that wait, at most
 * `maxHoldMs`, so that a client looping on 429s costs the instance an answer a second per
 * connection instead of its event loop and the others' latency. A caller that waits as told, or
 * requests sent together, are answered at once. Bounded, oldest out first.
 */
export class RefusalHolds {
  private readonly refusals = new Map<string, { at: number; until: number }>()

  constructor(
    private readonly maxHoldMs = 1_000,
    private readonly maxCallers = 100_000,
  ) {}

  /** Counts a refusal of `caller` for `waitMs` of a request that arrived at `arrivedAt` (performance.now()): how long to hold its answer. */
  holdMs(caller: string, waitMs: number, arrivedAt: number): number {
    const now = performance.now()
    const last = this.refusals.get(caller)
    if (last !== undefined && last.until > now) return arrivedAt > last.at ? Math.min(last.until - now, this.maxHoldMs) : 0
    this.refusals.delete(caller)
    if (this.refusals.size >= this.maxCallers) this.refusals.delete(this.refusals.keys().next().value!)
    this.refusals.set(caller, { at: now, until: now + waitMs })
    return 0
  }
}

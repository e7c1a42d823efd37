import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import { problem } from '../lib/problem.js'

/** Failure counters with a fixed window that starts at the first failure. */
export interface CounterStore {
  /** The current count and the milliseconds until it resets (0 when there is none). */
  read(key: string): Promise<{ count: number; resetInMs: number }>
  increment(key: string, windowMs: number): Promise<void>
  reset(key: string): Promise<void>
}

/** One process's counters; bounded so that a flood of distinct keys cannot exhaust memory. */
export class MemoryCounterStore implements CounterStore {
  private readonly counters = new Map<string, { count: number; expiresAt: number }>()

  constructor(private readonly maxKeys = 100_000) {}

  async read(key: string) {
    const entry = this.live(key)
    return entry ? { count: entry.count, resetInMs: entry.expiresAt - Date.now() } : { count: 0, resetInMs: 0 }
  }

  async increment(key: string, windowMs: number) {
    const entry = this.live(key)
    if (entry) {
      entry.count += 1
      return
    }
    if (this.counters.size >= this.maxKeys) this.evictExpiredOrOldest()
    this.counters.set(key, { count: 1, expiresAt: Date.now() + windowMs })
  }

  async reset(key: string) {
    this.counters.delete(key)
  }

  clear(): void {
    this.counters.clear()
  }

  private live(key: string) {
    const entry = this.counters.get(key)
    if (entry && entry.expiresAt <= Date.now()) {
      this.counters.delete(key)
      return undefined
    }
    return entry
  }

  private evictExpiredOrOldest() {
    const now = Date.now()
    for (const [key, entry] of this.counters) if (entry.expiresAt <= now) this.counters.delete(key)
    const oldest = this.counters.keys().next()
    if (this.counters.size >= this.maxKeys && !oldest.done) this.counters.delete(oldest.value)
  }
}

/** Counters in Redis, shared by every instance of the service. */
export class RedisCounterStore implements CounterStore {
  constructor(private readonly redis: Redis, private readonly prefix = 'login-failures:') {}

  async read(key: string) {
    const results = await this.redis.multi().get(this.prefix + key).pttl(this.prefix + key).exec()
    const count = Number(results?.[0]?.[1] ?? 0)
    const ttl = Number(results?.[1]?.[1] ?? -2)
    return { count, resetInMs: ttl > 0 ? ttl : 0 }
  }

  async increment(key: string, windowMs: number) {
    // NX: the window starts at the first failure and is not pushed back by later ones.
    await this.redis.multi().incr(this.prefix + key).pexpire(this.prefix + key, windowMs, 'NX').exec()
  }

  async reset(key: string) {
    await this.redis.del(this.prefix + key)
  }
}

/**
 * Redis first; while Redis fails, this process's own counters, so that an outage of the cache
 * neither locks every user out of login nor lifts the limit altogether.
 */
export class FallbackCounterStore implements CounterStore {
  constructor(
    private readonly primary: CounterStore,
    private readonly fallback: CounterStore,
    private readonly onError: (error: unknown) => void,
  ) {}

  read(key: string) {
    return this.attempt((store) => store.read(key))
  }

  increment(key: string, windowMs: number) {
    return this.attempt((store) => store.increment(key, windowMs))
  }

  reset(key: string) {
    return this.attempt((store) => store.reset(key))
  }

  private async attempt<T>(operation: (store: CounterStore) => Promise<T>): Promise<T> {
    try {
      return await operation(this.primary)
    } catch (error) {
      this.onError(error)
      return operation(this.fallback)
    }
  }
}

export interface ThrottleLimits {
  perClient: number
  perAccount: number
  windowSeconds: number
}

/** Keys carry a digest of the e-mail, not the address itself. */
const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32)

/**
 * Limits failed logins per (client address, e-mail) and per e-mail from anywhere (§2). Windows
 * expire, so the rightful owner is never locked out for good; a success clears the client's counter.
 */
export class LoginThrottle {
  constructor(private readonly store: CounterStore, private readonly limits: ThrottleLimits) {}

  private keys(clientIp: string, email: string) {
    const account = digest(email)
    return { client: `client:${clientIp}:${account}`, account: `account:${account}` }
  }

  /** Throws 429 with Retry-After when either counter is at its limit. */
  async assertAllowed(clientIp: string, email: string): Promise<void> {
    const keys = this.keys(clientIp, email)
    const [client, account] = await Promise.all([this.store.read(keys.client), this.store.read(keys.account)])
    const blocked = [
      client.count >= this.limits.perClient ? client.resetInMs : 0,
      account.count >= this.limits.perAccount ? account.resetInMs : 0,
    ].filter((ms) => ms > 0)
    if (blocked.length === 0) return
    const retryAfter = Math.max(1, Math.ceil(Math.max(...blocked) / 1000))
    throw problem(429, 'throttled', `Request was throttled. Expected available in ${retryAfter} seconds.`, {
      headers: { 'retry-after': String(retryAfter) },
    })
  }

  async recordFailure(clientIp: string, email: string): Promise<void> {
    const keys = this.keys(clientIp, email)
    const windowMs = this.limits.windowSeconds * 1000
    await Promise.all([this.store.increment(keys.client, windowMs), this.store.increment(keys.account, windowMs)])
  }

  async recordSuccess(clientIp: string, email: string): Promise<void> {
    await this.store.reset(this.keys(clientIp, email).client)
  }
}

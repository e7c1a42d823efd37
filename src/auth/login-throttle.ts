import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import { problem } from '../lib/problem.js'

/** A counter and the count at which it refuses. */
export interface CounterLimit {
  key: string
  limit: number
}

/**
 * Attempt counters with a fixed window that starts at the first count. A count is reserved before
 * the password is checked, so that a burst of concurrent guesses cannot all pass the check first.
 */
export interface CounterStore {
  /**
   * Atomically: when every counter is below its limit, counts one on each and returns 0; otherwise
   * counts nothing and returns the milliseconds until the blocking counters reset (at least 1).
   */
  reserve(counters: CounterLimit[], windowMs: number): Promise<number>
  /** Gives back one count on each of `keys`, and clears the counters `clear` altogether. */
  release(keys: string[], clear?: string[]): Promise<void>
  /** Without counting: the milliseconds until the counters at their limit reset, 0 when none is. */
  blockedMs(counters: CounterLimit[]): Promise<number>
}

/** One process's counters; bounded so that a flood of distinct keys cannot exhaust memory. */
export class MemoryCounterStore implements CounterStore {
  private readonly counters = new Map<string, { count: number; expiresAt: number }>()

  constructor(private readonly maxKeys = 100_000) {}

  // No await between the check and the counting: atomic within the event loop.
  async reserve(counters: CounterLimit[], windowMs: number): Promise<number> {
    let blockedMs = 0
    for (const { key, limit } of counters) {
      const entry = this.live(key)
      if (entry && entry.count >= limit) blockedMs = Math.max(blockedMs, entry.expiresAt - Date.now(), 1)
    }
    if (blockedMs > 0) return blockedMs
    for (const { key } of counters) {
      const entry = this.live(key)
      if (entry) {
        entry.count += 1
        continue
      }
      if (this.counters.size >= this.maxKeys) this.evictExpiredOrOldest()
      this.counters.set(key, { count: 1, expiresAt: Date.now() + windowMs })
    }
    return 0
  }

  async release(keys: string[], clear: string[] = []): Promise<void> {
    for (const key of keys) {
      const entry = this.live(key)
      if (entry && entry.count > 1) entry.count -= 1
      else this.counters.delete(key)
    }
    for (const key of clear) this.counters.delete(key)
  }

  clear(): void {
    this.counters.clear()
  }

  // reserve's check, counting nothing.
  async blockedMs(counters: CounterLimit[]): Promise<number> {
    let blockedMs = 0
    for (const { key, limit } of counters) {
      const entry = this.live(key)
      if (entry && entry.count >= limit) blockedMs = Math.max(blockedMs, entry.expiresAt - Date.now(), 1)
    }
    return blockedMs
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

/**
 * KEYS: the counters; ARGV[1]: the window in ms; ARGV[i + 1]: the limit of KEYS[i]. Check and count
 * in one script, so that concurrent attempts on any instance see each other's reservations. The
 * window starts at the first count and later ones do not push it back.
 */
const RESERVE_SCRIPT = `
local blocked = 0
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') >= tonumber(ARGV[i + 1]) then
    local ttl = redis.call('PTTL', key)
    -- A counter without expiry would block for good: give it a window.
    if ttl == -1 then redis.call('PEXPIRE', key, ARGV[1]); ttl = tonumber(ARGV[1]) end
    if ttl < 1 then ttl = 1 end
    if ttl > blocked then blocked = ttl end
  end
end
if blocked > 0 then return blocked end
for _, key in ipairs(KEYS) do
  if redis.call('INCR', key) == 1 or redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, ARGV[1]) end
end
return 0
`

/** KEYS: the counters; ARGV[i]: the limit of KEYS[i]. The reserve script's check, counting nothing. */
const BLOCKED_SCRIPT = `
local blocked = 0
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') >= tonumber(ARGV[i]) then
    local ttl = redis.call('PTTL', key)
    if ttl < 1 then ttl = 1 end
    if ttl > blocked then blocked = ttl end
  end
end
return blocked
`

/** KEYS[1..ARGV[1]]: give back one count; the other KEYS: clear. */
const RELEASE_SCRIPT = `
local given = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  if i <= given and tonumber(redis.call('GET', key) or '0') > 1 then redis.call('DECR', key) else redis.call('DEL', key) end
end
return 0
`

type ScriptCommand = (numberOfKeys: number, ...args: (string | number)[]) => Promise<unknown>

/** Counters in Redis, shared by every instance of the service; one round trip per operation. */
export class RedisCounterStore implements CounterStore {
  constructor(private readonly redis: Redis, private readonly prefix = 'login-failures:') {
    // EVALSHA with a fallback to EVAL: the script text is sent once per connection.
    redis.defineCommand('loginThrottleReserve', { lua: RESERVE_SCRIPT })
    redis.defineCommand('loginThrottleRelease', { lua: RELEASE_SCRIPT })
    redis.defineCommand('loginThrottleBlocked', { lua: BLOCKED_SCRIPT })
  }

  private command(name: 'loginThrottleReserve' | 'loginThrottleRelease' | 'loginThrottleBlocked'): ScriptCommand {
    return (this.redis as unknown as Record<string, ScriptCommand>)[name]!.bind(this.redis)
  }

  async reserve(counters: CounterLimit[], windowMs: number): Promise<number> {
    const keys = counters.map(({ key }) => this.prefix + key)
    const result = await this.command('loginThrottleReserve')(keys.length, ...keys, windowMs, ...counters.map(({ limit }) => limit))
    return Number(result)
  }

  async release(keys: string[], clear: string[] = []): Promise<void> {
    const all = [...keys, ...clear].map((key) => this.prefix + key)
    if (all.length > 0) await this.command('loginThrottleRelease')(all.length, ...all, keys.length)
  }

  async blockedMs(counters: CounterLimit[]): Promise<number> {
    const keys = counters.map(({ key }) => this.prefix + key)
    return Number(await this.command('loginThrottleBlocked')(keys.length, ...keys, ...counters.map(({ limit }) => limit)))
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

  reserve(counters: CounterLimit[], windowMs: number) {
    return this.attempt((store) => store.reserve(counters, windowMs))
  }

  release(keys: string[], clear?: string[]) {
    return this.attempt((store) => store.release(keys, clear))
  }

  blockedMs(counters: CounterLimit[]) {
    return this.attempt((store) => store.blockedMs(counters))
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
  /** Failures per (client address, e-mail). */
  perClient: number
  /** Failures per e-mail, from any address. */
  perAccount: number
  /** Failures per client address, whatever the e-mail (password spraying, hashing floods). */
  perAddress: number
  windowSeconds: number
}

/** Keys carry a digest of the e-mail, not the address itself. */
const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32)

/** One attempt's counts, taken before its password is checked. */
export interface LoginReservation {
  /** The password was right: clear the client's counter and give back the others' counts. */
  succeeded(): Promise<void>
  /** The password was never checked (the service was busy or failed): give every count back. */
  cancelled(): Promise<void>
}

/**
 * Limits login attempts per (client address, e-mail), per e-mail from anywhere and per client
 * address (§2). Each attempt is counted before its password is checked and stays counted when it
 * fails; windows expire, so the rightful owner is never locked out for good.
 */
export class LoginThrottle {
  constructor(private readonly store: CounterStore, private readonly limits: ThrottleLimits) {}

  private keys(clientIp: string, email: string) {
    const account = digest(email)
    return { client: `client:${clientIp}:${account}`, account: `account:${account}`, address: `address:${clientIp}` }
  }

  /** Counts the attempt, or throws 429 with Retry-After when any counter is at its limit. */
  async reserve(clientIp: string, email: string): Promise<LoginReservation> {
    const keys = this.keys(clientIp, email)
    const blockedMs = await this.store.reserve(
      [
        { key: keys.client, limit: this.limits.perClient },
        { key: keys.account, limit: this.limits.perAccount },
        { key: keys.address, limit: this.limits.perAddress },
      ],
      this.limits.windowSeconds * 1000,
    )
    if (blockedMs > 0) {
      const retryAfter = Math.max(1, Math.ceil(blockedMs / 1000))
      throw problem(429, 'throttled', `Request was throttled. Expected available in ${retryAfter} seconds.`, {
        headers: { 'retry-after': String(retryAfter) },
      })
    }
    return {
      succeeded: () => this.store.release([keys.account, keys.address], [keys.client]),
      cancelled: () => this.store.release([keys.client, keys.account, keys.address]),
    }
  }
}

import { createHash, randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { problem } from '../lib/problem.js'

/** A counter and the count at which it refuses. */
export interface CounterLimit {
  key: string
  limit: number
}

/** What an attempt's end does to one counter: one failure counted, its failures cleared, or neither. */
export type Settlement = 'failed' | 'cleared' | 'returned'

/** `reserve`'s answer when no counter is at its limit by failures alone, only with attempts in flight. */
export const IN_FLIGHT = -1

/**
 * Per counter, failures in a fixed window that starts at the first one, and the attempts in flight
 * (each a lease, so that an instance that dies mid-attempt does not hold its place for good). An
 * attempt is put in flight before its password is checked, so that a burst of concurrent guesses
 * cannot all pass the check first; a failure turns its place into a failure, a success gives it back.
 */
export interface CounterStore {
  /**
   * Atomically: when every counter's failures plus attempts in flight are below its limit, puts
   * `attempt` in flight on each for at most `leaseMs` and returns 0. Otherwise takes nothing and
   * returns the milliseconds until the failures let one more attempt through (at least 1), or
   * IN_FLIGHT when failures alone are below every limit.
   */
  reserve(attempt: string, counters: CounterLimit[], leaseMs: number, windowMs: number): Promise<number>
  /** Takes `attempt` out of flight on each counter and applies its settlement. */
  settle(attempt: string, counters: { key: string; settlement: Settlement }[], windowMs: number): Promise<void>
  /** Without counting: the milliseconds until the counters' failures let one more attempt through, 0 when none is at its limit. */
  blockedMs(counters: CounterLimit[]): Promise<number>
}

/** One process's counters; bounded so that a flood of distinct keys cannot exhaust memory. */
export class MemoryCounterStore implements CounterStore {
  private readonly failures = new Map<string, { count: number; expiresAt: number }>()
  /** Per key, the attempts in flight and when their lease ends; an entry only while one is. */
  private readonly inFlight = new Map<string, Map<string, number>>()

  constructor(private readonly maxKeys = 100_000) {}

  // No await between the check and the counting: atomic within the event loop.
  async reserve(attempt: string, counters: CounterLimit[], leaseMs: number): Promise<number> {
    let failedMs = 0
    let busy = false
    for (const { key, limit } of counters) {
      const failures = this.live(key)
      if (failures && failures.count >= limit) failedMs = Math.max(failedMs, failures.expiresAt - Date.now(), 1)
      else if ((failures?.count ?? 0) + this.flying(key) >= limit) busy = true
    }
    if (failedMs > 0) return failedMs
    if (busy) return IN_FLIGHT
    for (const { key } of counters) {
      const attempts = this.inFlight.get(key) ?? new Map<string, number>()
      this.inFlight.set(key, attempts.set(attempt, Date.now() + leaseMs))
    }
    return 0
  }

  async settle(attempt: string, counters: { key: string; settlement: Settlement }[], windowMs: number): Promise<void> {
    for (const { key, settlement } of counters) {
      const attempts = this.inFlight.get(key)
      attempts?.delete(attempt)
      if (attempts?.size === 0) this.inFlight.delete(key)
      if (settlement === 'failed') this.countFailure(key, windowMs)
      else if (settlement === 'cleared') this.failures.delete(key)
    }
  }

  clear(): void {
    this.failures.clear()
    this.inFlight.clear()
  }

  private countFailure(key: string, windowMs: number) {
    const entry = this.live(key)
    if (entry) {
      entry.count += 1
      return
    }
    if (this.failures.size >= this.maxKeys) this.evictExpiredOrOldest()
    this.failures.set(key, { count: 1, expiresAt: Date.now() + windowMs })
  }

  /** Attempts in flight on `key` whose lease has not ended. */
  private flying(key: string): number {
    const attempts = this.inFlight.get(key)
    if (!attempts) return 0
    const now = Date.now()
    for (const [attempt, leaseEnd] of attempts) if (leaseEnd <= now) attempts.delete(attempt)
    if (attempts.size === 0) this.inFlight.delete(key)
    return attempts.size
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
    const entry = this.failures.get(key)
    if (entry && entry.expiresAt <= Date.now()) {
      this.failures.delete(key)
      return undefined
    }
    return entry
  }

  private evictExpiredOrOldest() {
    const now = Date.now()
    for (const [key, entry] of this.failures) if (entry.expiresAt <= now) this.failures.delete(key)
    const oldest = this.failures.keys().next()
    if (this.failures.size >= this.maxKeys && !oldest.done) this.failures.delete(oldest.value)
  }
}

/**
 * KEYS: the n failure counters, then their n sorted sets of attempts in flight (scored by the end of
 * their lease); ARGV: the attempt, the lease and the window in ms, then each counter's limit. Check
 * and take in one script, so that concurrent attempts on any instance see each other. Redis's clock
 * dates the leases, so that the instances' clocks need not agree.
 */
const RESERVE_SCRIPT = `
local n = #KEYS / 2
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local failed = 0
local busy = false
for i = 1, n do
  local failures = tonumber(redis.call('GET', KEYS[i]) or '0')
  if failures >= tonumber(ARGV[i + 3]) then
    local ttl = redis.call('PTTL', KEYS[i])
    -- A counter without expiry would block for good: give it a window.
    if ttl == -1 then redis.call('PEXPIRE', KEYS[i], ARGV[3]); ttl = tonumber(ARGV[3]) end
    if ttl < 1 then ttl = 1 end
    if ttl > failed then failed = ttl end
  else
    redis.call('ZREMRANGEBYSCORE', KEYS[n + i], '-inf', now)
    if failures + redis.call('ZCARD', KEYS[n + i]) >= tonumber(ARGV[i + 3]) then busy = true end
  end
end
if failed > 0 then return failed end
if busy then return ${IN_FLIGHT} end
for i = 1, n do
  redis.call('ZADD', KEYS[n + i], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[n + i], ARGV[2])
end
return 0
`

/** KEYS as RESERVE_SCRIPT's; ARGV: the attempt, the window in ms, then each counter's settlement. */
const SETTLE_SCRIPT = `
local n = #KEYS / 2
for i = 1, n do
  redis.call('ZREM', KEYS[n + i], ARGV[1])
  local settlement = ARGV[i + 2]
  if settlement == 'failed' then
    -- The window starts at the first failure; later ones do not push it back.
    if redis.call('INCR', KEYS[i]) == 1 or redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
  elseif settlement == 'cleared' then
    redis.call('DEL', KEYS[i])
  end
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

type ScriptCommand = (numberOfKeys: number, ...args: (string | number)[]) => Promise<unknown>

/** Counters in Redis, shared by every instance of the service; one round trip per operation. */
export class RedisCounterStore implements CounterStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'login-failures:',
  ) {
    // EVALSHA with a fallback to EVAL: the script text is sent once per connection.
    redis.defineCommand('loginThrottleReserve', { lua: RESERVE_SCRIPT })
    redis.defineCommand('loginThrottleSettle', { lua: SETTLE_SCRIPT })
    redis.defineCommand('loginThrottleBlocked', { lua: BLOCKED_SCRIPT })
  }

  private command(name: 'loginThrottleReserve' | 'loginThrottleSettle' | 'loginThrottleBlocked'): ScriptCommand {
    return (this.redis as unknown as Record<string, ScriptCommand>)[name]!.bind(this.redis)
  }

  /** Each counter's failures, then each one's attempts in flight. */
  private keysOf(counters: { key: string }[]): string[] {
    return [...counters.map(({ key }) => this.prefix + key), ...counters.map(({ key }) => `${this.prefix}${key}:in-flight`)]
  }

  async reserve(attempt: string, counters: CounterLimit[], leaseMs: number, windowMs: number): Promise<number> {
    const keys = this.keysOf(counters)
    const result = await this.command('loginThrottleReserve')(keys.length, ...keys, attempt, leaseMs, windowMs, ...counters.map(({ limit }) => limit))
    return Number(result)
  }

  async settle(attempt: string, counters: { key: string; settlement: Settlement }[], windowMs: number): Promise<void> {
    const keys = this.keysOf(counters)
    await this.command('loginThrottleSettle')(keys.length, ...keys, attempt, windowMs, ...counters.map(({ settlement }) => settlement))
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

  /** Attempts this process's counters took while Redis failed: they end there too. */
  private readonly onFallback = new Set<string>()

  async reserve(attempt: string, counters: CounterLimit[], leaseMs: number, windowMs: number): Promise<number> {
    try {
      return await this.primary.reserve(attempt, counters, leaseMs, windowMs)
    } catch (error) {
      this.onError(error)
      const result = await this.fallback.reserve(attempt, counters, leaseMs, windowMs)
      if (result === 0) this.onFallback.add(attempt)
      return result
    }
  }

  settle(attempt: string, counters: { key: string; settlement: Settlement }[], windowMs: number) {
    if (this.onFallback.delete(attempt)) return this.fallback.settle(attempt, counters, windowMs)
    return this.attempt((store) => store.settle(attempt, counters, windowMs))
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
  /** How long an attempt waits for the attempts in flight that hold a limit before it is refused. */
  burstWaitMs: number
}

/**
 * How long an attempt may stay in flight: far above a verification, however long the hashing
 * queue; an instance that dies mid-attempt holds its place no longer.
 */
const LEASE_MS = 30_000

/** A waiter on another instance's attempts polls: first soon, then at most this often. */
const FIRST_POLL_MS = 10
const LAST_POLL_MS = 200

/** Keys carry a digest of the e-mail, not the address itself. */
const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32)

/** Why a login was refused: failures in the window, or attempts in flight that did not end in time. */
export type ThrottleReason = 'failures' | 'in_flight'

export const throttleReason = (error: unknown): ThrottleReason | undefined => (error as { throttleReason?: ThrottleReason } | null)?.throttleReason

function throttled(waitMs: number, reason: ThrottleReason): Error {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  const error = problem(429, 'throttled', `Request was throttled. Expected available in ${retryAfter} seconds.`, {
    headers: { 'retry-after': String(retryAfter) },
  })
  return Object.assign(error, { throttleReason: reason })
}

/** One attempt's place in flight, taken before its password is checked. */
export interface LoginReservation {
  /** The password was right: clear the client's failures and give back the place. */
  succeeded(): Promise<void>
  /** The password was checked and refused: the place becomes a failure on every counter. */
  failed(): Promise<void>
  /** The password was never checked (the service was busy or failed): give back the place. */
  cancelled(): Promise<void>
}

/**
 * Limits login attempts per (client address, e-mail), per e-mail from anywhere and per client
 * address (§2). Each attempt is counted before its password is checked and stays counted when it
 * fails; windows expire, so the rightful owner is never locked out for good.
 *
 * An attempt that finds a limit held only by attempts in flight waits for them (up to
 * `burstWaitMs`) instead of being refused: once one succeeds and clears the client's failures, the
 * rest are checked in turn, so a burst of correct logins is served; once they have failed, the
 * limit is reached by failures and the wait ends in 429 with the window's real remainder.
 */
export class LoginThrottle {
  /** Waiters on this instance, per key, woken as soon as an attempt on that key ends here. */
  private readonly waiters = new Map<string, Set<() => void>>()

  constructor(
    private readonly store: CounterStore,
    private readonly limits: ThrottleLimits,
  ) {}

  private keys(clientIp: string, email: string) {
    const account = digest(email)
    return { client: `client:${clientIp}:${account}`, account: `account:${account}`, address: `address:${clientIp}` }
  }

  /**
   * Puts the attempt in flight, waiting for the attempts in flight that hold a limit; throws 429
   * with Retry-After when failures hold one, or when those in flight outlast the wait.
   */
  async reserve(clientIp: string, email: string): Promise<LoginReservation> {
    const keys = this.keys(clientIp, email)
    const counters = [
      { key: keys.client, limit: this.limits.perClient },
      { key: keys.account, limit: this.limits.perAccount },
      { key: keys.address, limit: this.limits.perAddress },
    ]
    const attempt = randomUUID()
    const windowMs = this.limits.windowSeconds * 1000
    const deadline = performance.now() + this.limits.burstWaitMs
    for (let pollMs = FIRST_POLL_MS; ; pollMs = Math.min(pollMs * 2, LAST_POLL_MS)) {
      const result = await this.store.reserve(attempt, counters, LEASE_MS, windowMs)
      if (result === 0) return this.reservation(attempt, keys)
      if (result !== IN_FLIGHT) throw throttled(result, 'failures')
      const remainingMs = deadline - performance.now()
      // They are being checked now: one more attempt gets through in about a second.
      if (remainingMs <= 0) throw throttled(1000, 'in_flight')
      await this.nextEnd(Object.values(keys), Math.min(pollMs, remainingMs))
    }
  }

  private reservation(attempt: string, keys: ReturnType<LoginThrottle['keys']>): LoginReservation {
    const settle = async (client: Settlement, others: Settlement) => {
      try {
        await this.store.settle(
          attempt,
          [
            { key: keys.client, settlement: client },
            { key: keys.account, settlement: others },
            { key: keys.address, settlement: others },
          ],
          this.limits.windowSeconds * 1000,
        )
      } finally {
        this.wake(Object.values(keys))
      }
    }
    return {
      succeeded: () => settle('cleared', 'returned'),
      failed: () => settle('failed', 'failed'),
      cancelled: () => settle('returned', 'returned'),
    }
  }

  /** Resolves when an attempt on one of `keys` ends on this instance, or after `timeoutMs` (another instance's). */
  private nextEnd(keys: string[], timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        for (const key of keys) {
          const waiting = this.waiters.get(key)
          waiting?.delete(wake)
          if (waiting?.size === 0) this.waiters.delete(key)
        }
        resolve()
      }
      const timer = setTimeout(wake, timeoutMs)
      for (const key of keys) this.waiters.set(key, (this.waiters.get(key) ?? new Set()).add(wake))
    })
  }

  private wake(keys: string[]): void {
    for (const key of keys) for (const wake of [...(this.waiters.get(key) ?? [])]) wake()
  }
}

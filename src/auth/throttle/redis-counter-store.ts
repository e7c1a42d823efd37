import type { Redis } from 'ioredis'
import type { CounterLimit, CounterStore, Release, ReleaseListener, Reservation, Settlement } from '../../lib/counter-store.js'

/** Where a counter's releases are published: its key with this suffix, a channel per key. */
const RELEASED = ':released'

/**
 * KEYS: the n failure counters, then their n sorted sets of attempts in flight (scored by the end of
 * their lease), then the count of releases; ARGV: the attempt, the lease and the window in ms, then
 * each counter's limit. Check and take in one script, so that concurrent attempts on any instance
 * see each other. Redis's clock dates the leases, so that the instances' clocks need not agree.
 * Returns 0 (taken), the longest wait of the counters failures fill, or {-i, releases} for the
 * first counter i that attempts in flight fill.
 */
const RESERVE_SCRIPT = `
local n = (#KEYS - 1) / 2
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local failed = 0
local busy = 0
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
    if busy == 0 and failures + redis.call('ZCARD', KEYS[n + i]) >= tonumber(ARGV[i + 3]) then busy = i end
  end
end
if failed > 0 then return failed end
if busy > 0 then return {-busy, tonumber(redis.call('GET', KEYS[#KEYS]) or '0')} end
for i = 1, n do
  redis.call('ZADD', KEYS[n + i], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[n + i], ARGV[2])
end
return 0
`

/**
 * KEYS as RESERVE_SCRIPT's; ARGV: the attempt, the window in ms, then each counter's settlement,
 * then each one's limit. Then publishes each counter's release on its channel, numbered by the
 * count of releases: 'blocked' when failures fill it, else the places free when this attempt gave
 * one back.
 */
const SETTLE_SCRIPT = `
local n = (#KEYS - 1) / 2
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
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
for i = 1, n do
  local limit = tonumber(ARGV[n + i + 2])
  local failures = tonumber(redis.call('GET', KEYS[i]) or '0')
  local release = nil
  if failures >= limit then
    release = 'blocked'
  elseif ARGV[i + 2] ~= 'failed' then
    redis.call('ZREMRANGEBYSCORE', KEYS[n + i], '-inf', now)
    local free = limit - failures - redis.call('ZCARD', KEYS[n + i])
    if free > 0 then release = free end
  end
  if release then redis.call('PUBLISH', KEYS[i] .. '${RELEASED}', redis.call('INCR', KEYS[#KEYS]) .. ' ' .. release) end
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

/**
 * Counters in Redis, shared by every instance of the service; one round trip per operation. The
 * releases come back on a connection of their own (pub/sub), subscribed to the keys waited on.
 */
export class RedisCounterStore implements CounterStore {
  private subscriber: Redis | undefined
  private closed = false
  private readonly listeners: ReleaseListener[] = []

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

  /** Each counter's failures, then each one's attempts in flight, then the count of releases. */
  private keysOf(counters: { key: string }[]): string[] {
    return [...counters.map(({ key }) => this.prefix + key), ...counters.map(({ key }) => `${this.prefix}${key}:in-flight`), `${this.prefix}releases`]
  }

  async reserve(attempt: string, counters: CounterLimit[], leaseMs: number, windowMs: number): Promise<Reservation> {
    const keys = this.keysOf(counters)
    const result = await this.command('loginThrottleReserve')(keys.length, ...keys, attempt, leaseMs, windowMs, ...counters.map(({ limit }) => limit))
    if (Array.isArray(result)) return { outcome: 'busy', key: counters[-Number(result[0]) - 1]!.key, version: Number(result[1]) }
    return Number(result) === 0 ? { outcome: 'reserved' } : { outcome: 'blocked', waitMs: Number(result) }
  }

  async settle(attempt: string, counters: (CounterLimit & { settlement: Settlement })[], windowMs: number): Promise<void> {
    const keys = this.keysOf(counters)
    const settlements = counters.map(({ settlement }) => settlement)
    await this.command('loginThrottleSettle')(keys.length, ...keys, attempt, windowMs, ...settlements, ...counters.map(({ limit }) => limit))
  }

  async blockedMs(counters: CounterLimit[]): Promise<number> {
    const keys = counters.map(({ key }) => this.prefix + key)
    return Number(await this.command('loginThrottleBlocked')(keys.length, ...keys, ...counters.map(({ limit }) => limit)))
  }

  async isMarked(key: string): Promise<boolean> {
    return (await this.redis.exists(this.prefix + key)) === 1
  }

  async mark(key: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.prefix + key, '1', 'PX', Math.max(1, Math.round(ttlMs)))
  }

  listen(listener: ReleaseListener): void {
    this.listeners.push(listener)
  }

  async watch(key: string): Promise<boolean> {
    // Closing: the waiters left look until their wait ends, on no new connection.
    if (this.closed) return false
    await this.subscription().subscribe(this.prefix + key + RELEASED)
    return true
  }

  unwatch(key: string): void {
    this.subscriber?.unsubscribe(this.prefix + key + RELEASED).catch(() => undefined)
  }

  live(): boolean {
    return this.subscriber?.status === 'ready'
  }

  async close(): Promise<void> {
    const subscriber = this.subscriber
    this.closed = true
    this.subscriber = undefined
    await subscriber?.quit().catch(() => subscriber.disconnect())
  }

  /** The connection releases come on, opened at the first wait (ioredis subscribes it again after a reconnection). */
  private subscription(): Redis {
    if (this.subscriber) return this.subscriber
    const subscriber = this.redis.duplicate()
    // The main connection reports Redis's troubles; a lost subscription may have missed releases.
    subscriber.on('error', () => undefined)
    subscriber.on('close', () => {
      for (const listener of this.listeners) listener.interrupted()
    })
    subscriber.on('message', (channel: string, message: string) => {
      if (!channel.startsWith(this.prefix) || !channel.endsWith(RELEASED)) return
      const key = channel.slice(this.prefix.length, -RELEASED.length)
      const [version, release] = message.split(' ')
      const parsed: Release = release === 'blocked' ? 'blocked' : Number(release)
      for (const listener of this.listeners) listener.released(key, parsed, Number(version))
    })
    this.subscriber = subscriber
    return subscriber
  }
}

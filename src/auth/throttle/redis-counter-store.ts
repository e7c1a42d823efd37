import type { Redis } from 'ioredis'
import { IN_FLIGHT, type CounterLimit, type CounterStore, type Settlement } from './counter-store.js'

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

  async isMarked(key: string): Promise<boolean> {
    return (await this.redis.exists(this.prefix + key)) === 1
  }

  async mark(key: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.prefix + key, '1', 'PX', Math.max(1, Math.round(ttlMs)))
  }
}

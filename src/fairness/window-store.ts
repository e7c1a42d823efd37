import type { Redis } from 'ioredis'

/** One fixed-window counter to charge: its key, its limit per window. */
export interface WindowCharge {
  key: string
  limit: number
}

/** A counter after one request was charged to it: its count in the window and the milliseconds the window has left. */
export interface WindowCount {
  count: number
  resetMs: number
}

/**
 * Fixed windows of request counts (the window starts with its first request). `charge` counts one
 * request on every counter at once, refused or not: a client that keeps sending past its limit
 * stays refused until its window ends.
 */
export interface WindowStore {
  charge(charges: WindowCharge[], windowMs: number): Promise<WindowCount[]>
}

/** One process's windows; bounded, so that a flood of distinct keys cannot exhaust memory. */
export class MemoryWindowStore implements WindowStore {
  private readonly windows = new Map<string, { count: number; endsAt: number }>()

  constructor(private readonly maxKeys = 100_000) {}

  async charge(charges: WindowCharge[], windowMs: number): Promise<WindowCount[]> {
    const now = performance.now()
    return charges.map(({ key }) => {
      let window = this.windows.get(key)
      if (!window || window.endsAt <= now) {
        if (window) this.windows.delete(key)
        else if (this.windows.size >= this.maxKeys) this.evict(now)
        window = { count: 0, endsAt: now + windowMs }
        this.windows.set(key, window)
      }
      window.count += 1
      return { count: window.count, resetMs: Math.max(1, Math.ceil(window.endsAt - now)) }
    })
  }

  /** Ended windows first; the oldest when none has (insertion order is the windows' start order). */
  private evict(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key)
    if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
  }
}

/**
 * KEYS: the counters; ARGV[1]: the window in ms. Counts and dates every counter in one script, one
 * round trip: Redis's clock ends the windows, so that the instances' clocks need not agree.
 * Returns count, ttl pairs.
 */
const CHARGE_SCRIPT = `
local out = {}
for i, key in ipairs(KEYS) do
  local count = redis.call('INCR', key)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then redis.call('PEXPIRE', key, ARGV[1]); ttl = tonumber(ARGV[1]) end
  out[2 * i - 1] = count
  out[2 * i] = ttl
end
return out
`

type ChargeCommand = (numberOfKeys: number, ...args: (string | number)[]) => Promise<number[]>

/** The fleet's windows in Redis: every instance counts the same principal's requests together. */
export class RedisWindowStore implements WindowStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'rate:',
  ) {
    redis.defineCommand('fairnessCharge', { lua: CHARGE_SCRIPT })
  }

  async charge(charges: WindowCharge[], windowMs: number): Promise<WindowCount[]> {
    const command = (this.redis as unknown as Record<string, ChargeCommand>).fairnessCharge!.bind(this.redis)
    const result = await command(charges.length, ...charges.map(({ key }) => this.prefix + key), windowMs)
    return charges.map((_, i) => ({ count: Number(result[2 * i]), resetMs: Math.max(1, Number(result[2 * i + 1])) }))
  }
}

/** After Redis failed, this instance's windows alone for so long: requests do not each wait on a Redis that is down. */
const PRIMARY_RETRY_MS = 1000

/**
 * Redis first; while it fails (or answers slower than its command timeout), this instance's own
 * windows: an outage of the cache neither fails requests nor lifts the limits.
 */
export class FallbackWindowStore implements WindowStore {
  private primaryDownUntil = 0

  constructor(
    private readonly primary: WindowStore,
    private readonly fallback: WindowStore,
    private readonly onError: (error: unknown) => void,
  ) {}

  async charge(charges: WindowCharge[], windowMs: number): Promise<WindowCount[]> {
    if (performance.now() >= this.primaryDownUntil) {
      try {
        return await this.primary.charge(charges, windowMs)
      } catch (error) {
        this.primaryDownUntil = performance.now() + PRIMARY_RETRY_MS
        this.onError(error)
      }
    }
    return this.fallback.charge(charges, windowMs)
  }

  /** Whether the limits are this instance's alone now (Redis failed within the last second). */
  get local(): boolean {
    return performance.now() < this.primaryDownUntil
  }
}

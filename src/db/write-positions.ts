import type { Redis } from 'ioredis'

/**
 * Where each caller's last write stands in the primary's WAL, for read-your-writes across the
 * fleet (docs/decisions.md): kept per user, for `ttlMs` (past it, every replica a read may use has
 * replayed it), only ever raised.
 */
export interface WritePositions {
  record(userId: string, lsn: bigint): Promise<void>
  /** The position a read of `userId` must see; undefined: none recent. Throws when it cannot tell. */
  get(userId: string): Promise<bigint | undefined>
}

/** This instance's memory: the fleet's store without Redis (one instance), and the fallback of Redis's own writes. */
export class MemoryWritePositions implements WritePositions {
  private readonly positions = new Map<string, { lsn: bigint; until: number }>()

  constructor(private readonly ttlMs: number) {}

  async record(userId: string, lsn: bigint): Promise<void> {
    const now = Date.now()
    const held = this.positions.get(userId)
    this.positions.set(userId, { lsn: held && held.until > now && held.lsn > lsn ? held.lsn : lsn, until: now + this.ttlMs })
    // Swept as it grows: one entry per user who wrote in the last ttl.
    if (this.positions.size > 10_000) for (const [key, entry] of this.positions) if (entry.until <= now) this.positions.delete(key)
  }

  async get(userId: string): Promise<bigint | undefined> {
    const held = this.positions.get(userId)
    return held && held.until > Date.now() ? held.lsn : undefined
  }
}

/** Positions as 16 hex digits, so that Redis compares them as strings. */
const hex = (lsn: bigint) => lsn.toString(16).padStart(16, '0')

/** KEYS[1]: the user's position; ARGV: the new one, the ttl in ms. Raised only: two writes may finish in either order. */
const RAISE_SCRIPT = `
local held = redis.call('GET', KEYS[1])
if held and held > ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
`

/** The fleet's positions in Redis (REDIS_URL), so that a caller's next read sees its write on any instance. */
export class RedisWritePositions implements WritePositions {
  constructor(
    private readonly redis: Redis,
    private readonly ttlMs: number,
  ) {
    redis.defineCommand('raiseWritePosition', { lua: RAISE_SCRIPT, numberOfKeys: 1 })
  }

  private key(userId: string): string {
    return `wal-position:${userId}`
  }

  async record(userId: string, lsn: bigint): Promise<void> {
    await (this.redis as unknown as { raiseWritePosition(key: string, lsn: string, ttl: number): Promise<unknown> }).raiseWritePosition(
      this.key(userId),
      hex(lsn),
      this.ttlMs,
    )
  }

  async get(userId: string): Promise<bigint | undefined> {
    const held = await this.redis.get(this.key(userId))
    return held === null ? undefined : BigInt(`0x${held}`)
  }
}

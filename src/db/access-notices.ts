import pg from 'pg'
import { Coalescer } from '../lib/coalescer.js'

/** The channel db/migrations/0014_access_revocation_notices.ts names users on. */
const CHANNEL = 'access_revoked'
const MAX_BACKOFF_MS = 30_000
/** The bound of a fence: a primary slower than this sends the read to the primary itself. */
const FENCE_TIMEOUT_MS = 1_000

export interface AccessNoticesOptions {
  /** The primary's URL (DATABASE_URL). */
  url: string
  /** A user's access was taken away by a commit on the primary: called as the notice arrives. */
  onRevoked(userId: string): void
  /**
   * Listening (again) after a time it was not: a change committed meanwhile was not heard of, so
   * whatever the primary had committed by now must be replayed before a replica answers anyone.
   */
  onListening(): void
  onError(error: unknown): void
}

/**
 * One connection of its own to the primary that LISTENs for the users whose access a commit took
 * away (a notice is delivered when its transaction commits, in commit order), and fences reads on
 * it (`heardAll`). Lost, it connects again with back-off (1 s doubling to 30 s), until stopped.
 */
export class AccessNotices {
  private client: pg.Client | undefined
  /** The client once it listens. */
  private listening: pg.Client | undefined
  private stopped = false
  /** One fence at a time; the reads that arrive meanwhile share the next. */
  private readonly fences = new Coalescer<null, null>(
    async (items) => {
      await this.fence()
      return items.map(() => null)
    },
    { maxBatch: 100_000, maxInFlight: 1, retryAlone: () => false },
  )
  private failures = 0
  private retry: NodeJS.Timeout | undefined

  constructor(private readonly options: AccessNoticesOptions) {}

  /** Connects and listens; resolves once listening, or once the first try failed (it tries again by itself). */
  async start(): Promise<void> {
    if (this.stopped) return
    const client = new pg.Client({ connectionString: this.options.url, connectionTimeoutMillis: 2_000 })
    client.on('notification', (notice) => {
      if (notice.channel === CHANNEL && notice.payload) this.options.onRevoked(notice.payload)
    })
    client.on('error', (error) => this.lost(client, error))
    client.on('end', () => this.lost(client, new Error('the connection of the access notices ended')))
    this.client = client
    try {
      await client.connect()
      await client.query(`LISTEN ${CHANNEL}`)
      this.listening = client
      this.failures = 0
      this.options.onListening()
    } catch (error) {
      this.lost(client, error)
    }
  }

  /**
   * Resolves true once every notice of a commit that ended before the call has been heard: a
   * statement on the listening connection, whose backend sends the notices it was signalled before
   * it answers (so that a read right after a revocation cannot beat its notice). False when not
   * listening, or no answer within a second: the caller then reads on the primary.
   */
  async heardAll(): Promise<boolean> {
    if (!this.listening) return false
    return this.fences.submit(null).then(
      () => true,
      () => false,
    )
  }

  private async fence(): Promise<void> {
    const client = this.listening
    if (!client) throw new Error('not listening')
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${FENCE_TIMEOUT_MS} ms`)), FENCE_TIMEOUT_MS)
    })
    await Promise.race([client.query('SELECT 1'), timeout]).finally(() => clearTimeout(timer))
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.retry)
    await this.client?.end().catch(() => undefined)
  }

  private lost(client: pg.Client, error: unknown): void {
    if (this.client !== client || this.stopped) return
    this.client = undefined
    this.listening = undefined
    client.removeAllListeners('end')
    client.end().catch(() => undefined)
    this.options.onError(error)
    this.failures += 1
    this.retry = setTimeout(() => void this.start(), Math.min(MAX_BACKOFF_MS, 1_000 * 2 ** (this.failures - 1)))
    this.retry.unref()
  }
}

import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/types.js'

/** At most one presence write per company role per this many milliseconds (§4 route 6). */
export const PRESENCE_WRITE_INTERVAL_MS = 30_000

/**
 * Bounds of a presence write: a table locked by someone else is given up on after LOCK_TIMEOUT_MS,
 * any statement after STATEMENT_TIMEOUT_MS, so that it never holds a pooled connection for long.
 */
export const PRESENCE_LOCK_TIMEOUT_MS = 200
export const PRESENCE_STATEMENT_TIMEOUT_MS = 1_000

/**
 * Marks company roles seen. A per-process memory of the last write skips the round trip inside
 * the interval; the SQL guard keeps several instances to about one write per interval too.
 */
export class PresenceTracker {
  private readonly lastWrite = new Map<string, number>()
  /** Writes under way: done after the answers that caused them, so awaited apart (`settled`). */
  private readonly inFlight = new Set<Promise<void>>()

  constructor(
    private readonly db: Kysely<Database>,
    private readonly intervalMs = PRESENCE_WRITE_INTERVAL_MS,
  ) {}

  /** A failed write is not tried again within the interval: a locked table costs one bounded attempt per role and interval. */
  async markSeen(companyRoleId: string, now = Date.now()): Promise<void> {
    const previous = this.lastWrite.get(companyRoleId)
    if (previous !== undefined && now - previous < this.intervalMs) return
    this.lastWrite.set(companyRoleId, now)
    const write = this.write(companyRoleId)
    this.inFlight.add(write)
    try {
      await write
    } finally {
      this.inFlight.delete(write)
    }
  }

  /** Its own short transaction, for the bounds: set_config(…, true) lasts until it ends. */
  private async write(companyRoleId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await sql`SELECT set_config('lock_timeout', ${`${PRESENCE_LOCK_TIMEOUT_MS}ms`}, true),
                       set_config('statement_timeout', ${`${PRESENCE_STATEMENT_TIMEOUT_MS}ms`}, true)`.execute(trx)
      await trx
        .insertInto('company_role_presence')
        .values({ company_role_id: companyRoleId, last_seen_at: sql<Date>`now()` })
        .onConflict((conflict) =>
          conflict
            .column('company_role_id')
            .doUpdateSet({ last_seen_at: sql<Date>`now()` })
            .where('company_role_presence.last_seen_at', '<', sql<Date>`now() - make_interval(secs => ${this.intervalMs / 1000})`),
        )
        .execute()
    })
  }

  /**
   * Resolves once the writes started by answers already sent are done (their failures are their
   * callers'): for a shutdown, and for a test that reads presence right after a request. A turn
   * of the event loop first, so that the hooks of an answer just finished have started theirs.
   */
  async settled(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve))
    await Promise.allSettled([...this.inFlight])
  }

  /** Forgets the in-memory throttle (the tests reset the database under a running app). */
  forget(): void {
    this.lastWrite.clear()
  }
}

import { sql } from 'kysely'
import type { Db } from '../../../db/types.js'

/** At most one presence write per company role per this many milliseconds (§4 route 6). */
export const PRESENCE_WRITE_INTERVAL_MS = 30_000

/**
 * Marks company roles seen. A per-process memory of the last write skips the round trip inside
 * the interval; the SQL guard keeps several instances to about one write per interval too.
 */
export class PresenceTracker {
  private readonly lastWrite = new Map<string, number>()

  constructor(
    private readonly db: Db,
    private readonly intervalMs = PRESENCE_WRITE_INTERVAL_MS,
  ) {}

  async markSeen(companyRoleId: string, now = Date.now()): Promise<void> {
    const previous = this.lastWrite.get(companyRoleId)
    if (previous !== undefined && now - previous < this.intervalMs) return
    this.lastWrite.set(companyRoleId, now)
    await this.db
      .insertInto('company_role_presence')
      .values({ company_role_id: companyRoleId, last_seen_at: sql<Date>`now()` })
      .onConflict((conflict) =>
        conflict
          .column('company_role_id')
          .doUpdateSet({ last_seen_at: sql<Date>`now()` })
          .where('company_role_presence.last_seen_at', '<', sql<Date>`now() - make_interval(secs => ${this.intervalMs / 1000})`),
      )
      .execute()
  }

  /** Forgets the in-memory throttle (the tests reset the database under a running app). */
  forget(): void {
    this.lastWrite.clear()
  }
}

import { sql } from 'kysely'
import type { Db } from '../db/types.js'

export interface PartnerPresence {
  last_seen_at: Date | null
  /** The database's clock, the same one that wrote last_seen_at, so app-server skew cannot shift the status. */
  now: Date
}

/**
 * When `roleId` and `partnerRoleId` share a conversation (either as buyer or as seller), the
 * partner's last activity; undefined when they share none. One query on the pair's unique index.
 */
export function findPartnerPresence(db: Db, roleId: string, partnerRoleId: string): Promise<PartnerPresence | undefined> {
  return db
    .selectFrom('chat_conversations')
    .leftJoin('company_role_presence', (join) => join.on('company_role_presence.company_role_id', '=', partnerRoleId))
    .select(['company_role_presence.last_seen_at', sql<Date>`now()`.as('now')])
    .where((eb) =>
      eb.or([
        eb.and([eb('buyer_company_role_id', '=', roleId), eb('seller_company_role_id', '=', partnerRoleId)]),
        eb.and([eb('buyer_company_role_id', '=', partnerRoleId), eb('seller_company_role_id', '=', roleId)]),
      ]),
    )
    .limit(1)
    .executeTakeFirst()
}

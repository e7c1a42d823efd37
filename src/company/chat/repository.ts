import { sql, type Kysely } from 'kysely'
import type { Database } from '../../../db/types.js'
import type { Scope } from '../../tenancy/scoped-statement.js'

/**
 * When `roleId` and `partnerRoleId` share a conversation (either as buyer or as seller), the
 * partner's last activity; no row when they share none. One lookup on the pair's unique index.
 */
function partnerPresence(db: Kysely<Database>, roleId: string, partnerRoleId: string) {
  return (
    db
      .selectFrom('chat_conversations')
      .leftJoin('company_role_presence', (join) => join.on('company_role_presence.company_role_id', '=', partnerRoleId))
      // `now` is the database's clock, the one that wrote last_seen_at: app-server skew cannot shift the status.
      .select(['chat_conversations.id as conversation_id', 'company_role_presence.last_seen_at', sql<Date>`now()`.as('now')])
      .where((eb) =>
        eb.or([
          eb.and([eb('buyer_company_role_id', '=', roleId), eb('seller_company_role_id', '=', partnerRoleId)]),
          eb.and([eb('buyer_company_role_id', '=', partnerRoleId), eb('seller_company_role_id', '=', roleId)]),
        ]),
      )
      .limit(1)
  )
}

/** Route 6's data query: the partner's presence, for a member of `{company_role_id}`. */
export const partnerPresenceRead = (db: Kysely<Database>, scope: Scope<{ partner_company_role_id: string }>) =>
  partnerPresence(db, scope.companyRoleId, scope.params.partner_company_role_id)

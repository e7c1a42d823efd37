import { sql, type Kysely } from 'kysely'
import { Precompiled } from '../../db/precompiled.js'
import type { Database, Db } from '../../db/types.js'
import { principalOf, userWithMembership, type PrincipalWithMembership, type ScopedPrincipal } from '../../tenancy/principal.js'

export interface PartnerPresence {
  last_seen_at: Date | null
  /** The database's clock, the same one that wrote last_seen_at, so app-server skew cannot shift the status. */
  now: Date
}

/**
 * When `roleId` and `partnerRoleId` share a conversation (either as buyer or as seller), the
 * partner's last activity; no row when they share none. One lookup on the pair's unique index.
 */
function partnerPresence(db: Kysely<Database>, roleId: string, partnerRoleId: string) {
  return db
    .selectFrom('chat_conversations')
    .leftJoin('company_role_presence', (join) => join.on('company_role_presence.company_role_id', '=', partnerRoleId))
    .select(['chat_conversations.id as conversation_id', 'company_role_presence.last_seen_at', sql<Date>`now()`.as('now')])
    .where((eb) =>
      eb.or([
        eb.and([eb('buyer_company_role_id', '=', roleId), eb('seller_company_role_id', '=', partnerRoleId)]),
        eb.and([eb('buyer_company_role_id', '=', partnerRoleId), eb('seller_company_role_id', '=', roleId)]),
      ]),
    )
    .limit(1)
}

/** Route 6 in one statement: the principal, their membership, and the partner's presence. */
const scopedPresenceStatement = new Precompiled((db, p: ScopedPrincipal & { partnerRoleId: string }) =>
  userWithMembership(db, p)
    .leftJoinLateral(partnerPresence(db, p.companyRoleId, p.partnerRoleId).as('presence'), (join) => join.onTrue())
    .selectAll('presence'),
)

export interface ScopedPartnerPresence {
  /** Undefined when the token's user is not active. */
  principal: PrincipalWithMembership | undefined
  /** Undefined when the two roles share no conversation. */
  presence: PartnerPresence | undefined
}

export async function findScopedPartnerPresence(db: Db, key: ScopedPrincipal, partnerRoleId: string): Promise<ScopedPartnerPresence> {
  const row = await scopedPresenceStatement.first(db, { ...key, partnerRoleId })
  if (!row) return { principal: undefined, presence: undefined }
  const { conversation_id: conversationId, last_seen_at: lastSeenAt, now } = row
  const shared = conversationId !== null && now !== null
  return { principal: principalOf(row), presence: shared ? { last_seen_at: lastSeenAt, now } : undefined }
}

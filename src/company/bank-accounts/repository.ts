import { sql } from 'kysely'
import { Precompiled } from '../../db/precompiled.js'
import type { Db } from '../../../db/types.js'
import type { ActiveBankAccount } from './rules.js'

/**
 * The company's active accounts, oldest first, locked until the transaction ends. Two removals in
 * the same company queue here (in the same lock order, so they cannot deadlock), and the second
 * sees the first one's result: PostgreSQL re-reads a row it waited for and drops it if it was removed.
 */
export function lockActiveBankAccounts(db: Db, companyId: string): Promise<ActiveBankAccount[]> {
  return db
    .selectFrom('bank_accounts')
    .select(['id', 'is_default', 'created_at'])
    .where('company_id', '=', companyId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .forUpdate()
    .execute()
}

// Precompiled: the status is a literal of the statement, which the partial index's generic plan needs.
const unsettledOperationStatement = new Precompiled((db, p: { bankAccountId: string }) =>
  db.selectFrom('operations').select('id').where('payout_bank_account_id', '=', p.bankAccountId).where('status', '=', 'awaiting_settlement').limit(1),
)

/** Whether an operation awaiting settlement pays into the account. */
export async function paysUnsettledOperation(db: Db, bankAccountId: string): Promise<boolean> {
  return (await unsettledOperationStatement.first(db, { bankAccountId })) !== undefined
}

/** Keeps the row, marked removed by whom and when; a removed account is never the default. */
export async function markBankAccountRemoved(db: Db, bankAccountId: string, userId: string): Promise<void> {
  await db
    .updateTable('bank_accounts')
    .set({ removed_at: sql<Date>`now()`, removed_by: userId, is_default: false })
    .where('id', '=', bankAccountId)
    .execute()
}

export async function makeDefaultBankAccount(db: Db, bankAccountId: string): Promise<void> {
  await db.updateTable('bank_accounts').set({ is_default: true }).where('id', '=', bankAccountId).execute()
}

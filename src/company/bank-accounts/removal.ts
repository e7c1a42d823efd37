import type { Db } from '../../../db/types.js'
import { inTransaction } from '../../db/transaction.js'
import { problem } from '../../lib/problem.js'
import { lockActiveBankAccounts, makeDefaultBankAccount, markBankAccountRemoved, paysUnsettledOperation } from './repository.js'
import { removalBlocker, successorDefault, type RemovalBlocker } from './rules.js'

const BLOCKER_DETAILS: Record<RemovalBlocker, string> = {
  bank_account_in_use: 'An operation awaiting settlement pays into this bank account.',
  last_bank_account: "The company's only active bank account cannot be removed.",
}

/**
 * Route 8: removes an active account of the company, in one transaction over the company's locked
 * accounts, so that concurrent removals can never leave it with no account or no default.
 */
export async function removeBankAccount(db: Db, companyId: string, bankAccountId: string, userId: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const accounts = await lockActiveBankAccounts(trx, companyId)
    const target = accounts.find((account) => account.id === bankAccountId)
    if (!target) throw problem(404, 'not_found', 'Not found.')
    const blocker = removalBlocker(accounts, await paysUnsettledOperation(trx, bankAccountId))
    if (blocker) throw problem(409, blocker, BLOCKER_DETAILS[blocker])
    const successor = successorDefault(accounts, target)
    // The old default is cleared before the new one is set: bank_accounts_one_default_idx is checked per row.
    await markBankAccountRemoved(trx, bankAccountId, userId)
    if (successor) await makeDefaultBankAccount(trx, successor)
  })
}

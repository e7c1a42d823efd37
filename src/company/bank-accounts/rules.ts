/** Route 8's rules: when a bank account may be removed, and which account becomes the default. */

export interface ActiveBankAccount {
  id: string
  is_default: boolean
  created_at: Date
}

export type RemovalBlocker = 'bank_account_in_use' | 'last_bank_account'

/**
 * Why the account cannot be removed, if it cannot. An account that an unsettled operation pays
 * into is in use even when it is also the last one: that is the more specific answer, and it still
 * holds after another account is added.
 */
export function removalBlocker(activeAccounts: readonly ActiveBankAccount[], paysUnsettledOperation: boolean): RemovalBlocker | undefined {
  if (paysUnsettledOperation) return 'bank_account_in_use'
  if (activeAccounts.length <= 1) return 'last_bank_account'
  return undefined
}

const byAge = (a: ActiveBankAccount, b: ActiveBankAccount): number =>
  a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * The account that becomes the default when `removed` goes: the oldest other active account
 * (by `created_at`, then id), and only when `removed` was the default.
 */
export function successorDefault(activeAccounts: readonly ActiveBankAccount[], removed: ActiveBankAccount): string | undefined {
  if (!removed.is_default) return undefined
  return activeAccounts.filter((account) => account.id !== removed.id).sort(byAge)[0]?.id
}

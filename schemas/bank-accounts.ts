import { Type } from '@sinclair/typebox'
import { Errors, Uuid } from './common.js'

export const BankAccountParams = Type.Object({
  company_role_id: Uuid,
  bank_account_id: Uuid,
})

export const removeBankAccountRouteSchema = {
  tags: ['company'],
  summary: 'Remove a bank account of the company',
  description:
    'Needs the `bank_accounts` permission, for a seller or a buyer role. The account must be an active account of ' +
    "the role's company, else `404` (also for another company's account). `409 bank_account_in_use` while an " +
    'operation awaiting settlement pays into it (this answer wins when it is also the last account); ' +
    "`409 last_bank_account` when it is the company's only active account. Removing the default makes the oldest " +
    'other active account (by creation time, then id) the default. The record is kept, marked removed with who ' +
    'and when; it never shows again, and removing it again is `404`. Concurrent removals are serialised per company.',
  params: BankAccountParams,
  response: {
    204: Type.Null({ description: 'Removed; no body' }),
    400: Errors[400],
    401: Errors[401],
    403: Type.Ref('Problem', { description: 'The membership lacks `bank_accounts` (`permission_denied`)' }),
    404: Errors[404],
    409: Type.Ref('Problem', { description: '`bank_account_in_use` or `last_bank_account`' }),
    // The route takes no body, but a client may send one: it is read (and ignored) like any other.
    413: Errors[413],
    415: Errors[415],
    503: Errors[503],
  },
}

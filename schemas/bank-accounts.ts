import { Type } from '@sinclair/typebox'
import { DEMO } from '../db/seed/ids.js'
import { Uuid } from './common.js'
import { BEARER_PROBLEMS, emptyResponse, invalid, Problems, routeResponses, when, withExample } from './responses.js'

export const BankAccountParams = Type.Object({
  company_role_id: withExample(Uuid, DEMO.roles.acmeSeller),
  bank_account_id: withExample(Uuid, DEMO.bankAccounts.acme2),
})

export const removeBankAccountRouteSchema = {
  operationId: 'removeBankAccount',
  tags: ['company'],
  summary: 'Remove a bank account of the company',
  description:
    'Needs the `bank_accounts` permission, for a seller or a buyer role. The account must be an active account of ' +
    "the role's company, else `404` (also for another company's account). `409 bank_account_in_use` while an " +
    'operation awaiting settlement pays into it (this answer wins when it is also the last account); ' +
    "`409 last_bank_account` when it is the company's only active account. Removing the default makes the oldest " +
    'other active account (by creation time, then id) the default. The record is kept, marked removed with who ' +
    'and when; it never shows again, and removing it again is `404`. Concurrent removals are serialised per company. ' +
    'The route takes no body: one sent anyway is ignored.',
  params: BankAccountParams,
  response: routeResponses({ 204: emptyResponse('Removed; no body') }, [
    invalid({ bank_account_id: ['Must be a valid uuid.'] }, 'A path id is not a UUID'),
    ...BEARER_PROBLEMS,
    when(Problems.permissionDenied, 'The membership lacks the `bank_accounts` permission'),
    when(
      Problems.notFound,
      "Not a member of `company_role_id`, or the account is not an active account of the role's company (removed ones included)",
    ),
    {
      status: 409,
      code: 'bank_account_in_use',
      detail: 'An operation awaiting settlement pays into this bank account.',
      when: 'An operation awaiting settlement pays into it (this answer wins when it is also the last account)',
    },
    {
      status: 409,
      code: 'last_bank_account',
      detail: "The company's only active bank account cannot be removed.",
      when: "It is the company's only active account",
    },
  ]),
}

import { describe, expect, it } from 'vitest'
import { bearer, DEMO, perTestTokens, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

const context = useTestApp()
const { bankAccounts: accounts, companies, roles, users } = DEMO
const UNKNOWN = 'ffffffff-0000-4000-8000-000000000000'

const url = (roleId: string, accountId: string) => `/api/company/v1/${roleId}/bank-account/${accountId}`
const db = async () => (await testDatabase()).db

const tokenOf = perTestTokens(context)

async function remove(roleId: string, accountId: string, email = 'alice@acme.example', headers: Record<string, string> = {}) {
  const authorization = headers.authorization ? {} : bearer(await tokenOf(email))
  return context.app.inject({ method: 'DELETE', url: url(roleId, accountId), headers: { ...authorization, ...headers } })
}

/** The company's accounts as stored, oldest first. */
async function stored(companyId: string) {
  return (await db())
    .selectFrom('bank_accounts')
    .select(['id', 'is_default', 'removed_at', 'removed_by'])
    .where('company_id', '=', companyId)
    .orderBy('created_at')
    .execute()
}

const activeIds = async (companyId: string) => (await stored(companyId)).filter((row) => row.removed_at === null).map((row) => row.id)
const defaultIds = async (companyId: string) => (await stored(companyId)).filter((row) => row.is_default).map((row) => row.id)

describe('DELETE /api/company/v1/{company_role_id}/bank-account/{bank_account_id}', () => {
  it('removes a free account: 204 with no body, the row kept and marked removed by the caller', async () => {
    const before = Date.now()
    const response = await remove(roles.acmeSeller, accounts.acme2)
    expect(response.statusCode).toBe(204)
    expect(response.body).toBe('')
    const row = (await stored(companies.acme)).find((account) => account.id === accounts.acme2)
    expect(row?.removed_by).toBe(users.alice)
    expect(row?.removed_at?.getTime()).toBeGreaterThanOrEqual(before - 1000)
    expect(row?.is_default).toBe(false)
    expect(await activeIds(companies.acme)).toEqual([accounts.acme1, accounts.acme3])
    expect(await defaultIds(companies.acme)).toEqual([accounts.acme1])
  })

  it('answers 404 to a second removal of the same account', async () => {
    expect((await remove(roles.acmeSeller, accounts.acme2)).statusCode).toBe(204)
    problemOf(await remove(roles.acmeSeller, accounts.acme2), 404, 'not_found')
  })

  it('answers with a trailing slash too', async () => {
    const response = await context.app.inject({
      method: 'DELETE',
      url: `${url(roles.acmeSeller, accounts.acme2)}/`,
      headers: bearer(await tokenOf('alice@acme.example')),
    })
    expect(response.statusCode).toBe(204)
  })

  it('moves the default to the oldest other active account when the default goes', async () => {
    expect((await remove(roles.acmeSeller, accounts.acme1)).statusCode).toBe(204)
    expect(await defaultIds(companies.acme)).toEqual([accounts.acme2])
    // The next oldest is acme3: in use, but an account in use may still be the default.
    expect((await remove(roles.acmeSeller, accounts.acme2)).statusCode).toBe(204)
    expect(await defaultIds(companies.acme)).toEqual([accounts.acme3])
  })

  it('answers 409 bank_account_in_use while an unsettled operation pays into the account, and frees it once settled', async () => {
    problemOf(await remove(roles.acmeSeller, accounts.acme3), 409, 'bank_account_in_use')
    expect(await activeIds(companies.acme)).toEqual([accounts.acme1, accounts.acme2, accounts.acme3])
    await (await db()).updateTable('operations').set({ status: 'settled', settled_at: new Date() }).where('id', '=', DEMO.operations.t5).execute()
    expect((await remove(roles.acmeSeller, accounts.acme3)).statusCode).toBe(204)
  })

  it("answers 409 last_bank_account for the company's only active account", async () => {
    problemOf(await remove(roles.gammaSeller, accounts.gamma1, 'carol@gamma.example'), 409, 'last_bank_account')
    expect(await activeIds(companies.gamma)).toEqual([accounts.gamma1])
    expect(await defaultIds(companies.gamma)).toEqual([accounts.gamma1])
  })

  it('answers bank_account_in_use before last_bank_account when both hold', async () => {
    expect((await remove(roles.acmeSeller, accounts.acme1)).statusCode).toBe(204)
    expect((await remove(roles.acmeSeller, accounts.acme2)).statusCode).toBe(204)
    problemOf(await remove(roles.acmeSeller, accounts.acme3), 409, 'bank_account_in_use')
  })

  it('works for a buyer role of the company too (the accounts are the company’s)', async () => {
    expect((await remove(roles.deltaBuyer, accounts.delta2, 'dave@delta.example')).statusCode).toBe(204)
    expect(await activeIds(companies.delta)).toEqual([accounts.delta1])
  })

  it("answers 404 for another company's account, an unknown account, and a role the caller is not a member of", async () => {
    problemOf(await remove(roles.acmeSeller, accounts.gamma1), 404, 'not_found')
    problemOf(await remove(roles.acmeSeller, accounts.delta2), 404, 'not_found')
    problemOf(await remove(roles.acmeSeller, UNKNOWN), 404, 'not_found')
    problemOf(await remove(roles.gammaSeller, accounts.gamma1), 404, 'not_found')
    problemOf(await remove(UNKNOWN, accounts.acme2), 404, 'not_found')
    expect(await activeIds(companies.gamma)).toEqual([accounts.gamma1])
    expect(await activeIds(companies.delta)).toEqual([accounts.delta1, accounts.delta2])
  })

  it('answers 403 permission_denied to a member without bank_accounts (erin has only marketplace)', async () => {
    problemOf(await remove(roles.acmeSeller, accounts.acme2, 'erin@acme.example'), 403, 'permission_denied')
    expect(await activeIds(companies.acme)).toContain(accounts.acme2)
  })

  it('answers 401 without a token and with a bad one', async () => {
    const anonymous = await context.app.inject({ method: 'DELETE', url: url(roles.acmeSeller, accounts.acme2) })
    problemOf(anonymous, 401, 'not_authenticated')
    problemOf(await remove(roles.acmeSeller, accounts.acme2, 'alice@acme.example', { authorization: 'Bearer not.a.token' }), 401, 'token_not_valid')
    expect(await activeIds(companies.acme)).toContain(accounts.acme2)
  })

  it('ignores a body, which a DELETE does not take, whatever its media type or size', async () => {
    const headers = bearer(await tokenOf('alice@acme.example'))
    const text = await context.app.inject({
      method: 'DELETE',
      url: url(roles.acmeSeller, accounts.acme2),
      headers: { ...headers, 'content-type': 'text/plain' },
      payload: 'please',
    })
    expect(text.statusCode).toBe(204)
    const large = await context.app.inject({
      method: 'DELETE',
      url: url(roles.acmeSeller, accounts.acme3),
      headers,
      payload: { padding: 'x'.repeat(17 * 1024) },
    })
    // Refused for what it is (title 5's operation pays into it), not for its body.
    problemOf(large, 409, 'bank_account_in_use')
    const broken = await context.app.inject({
      method: 'DELETE',
      url: url(roles.acmeSeller, accounts.acme1),
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{not json',
    })
    expect(broken.statusCode).toBe(204)
    const malformedType = await context.app.inject({
      method: 'DELETE',
      url: url(roles.acmeSeller, accounts.acme3),
      headers: { ...headers, 'content-type': ';;;' },
    })
    problemOf(malformedType, 409, 'bank_account_in_use')
    const untyped = await context.app.inject({ method: 'DELETE', url: url(roles.acmeSeller, accounts.acme3), headers, payload: Buffer.from('x') })
    problemOf(untyped, 409, 'bank_account_in_use')
    expect(await activeIds(companies.acme)).toEqual([accounts.acme3])
    const documented = (await context.app.inject({ method: 'GET', url: '/docs/json' })).json()
    const operation = documented.paths['/api/company/v1/{company_role_id}/bank-account/{bank_account_id}'].delete
    expect(Object.keys(operation.responses)).not.toEqual(expect.arrayContaining(['413']))
    expect(Object.keys(operation.responses)).not.toEqual(expect.arrayContaining(['415']))
    expect(operation).not.toHaveProperty('requestBody')
  })

  it('answers 400 to a malformed id', async () => {
    const body = problemOf(await remove(roles.acmeSeller, 'not-a-uuid'), 400, 'invalid')
    expect(body.errors).toHaveProperty('bank_account_id')
    problemOf(await remove('123', accounts.acme2), 400, 'invalid')
  })
})

// Each race runs a few times: one run may happen not to overlap on a real server.
describe('concurrent removals', { repeats: 4 }, () => {
  it('never remove both of the last two accounts: one 204, one 409 last_bank_account', async () => {
    const responses = await Promise.all([
      remove(roles.deltaSeller, accounts.delta1, 'dave@delta.example'),
      remove(roles.deltaBuyer, accounts.delta2, 'dave@delta.example'),
    ])
    expect(responses.map((response) => response.statusCode).sort()).toEqual([204, 409])
    problemOf(
      responses.find((response) => response.statusCode === 409)!,
      409,
      'last_bank_account',
    )
    const active = await activeIds(companies.delta)
    expect(active).toHaveLength(1)
    expect(await defaultIds(companies.delta)).toEqual(active)
  })

  it('leave exactly one default, the oldest survivor, when the default and the next go at once', async () => {
    const responses = await Promise.all([remove(roles.acmeSeller, accounts.acme2), remove(roles.acmeSeller, accounts.acme1)])
    expect(responses.map((response) => response.statusCode)).toEqual([204, 204])
    expect(await activeIds(companies.acme)).toEqual([accounts.acme3])
    expect(await defaultIds(companies.acme)).toEqual([accounts.acme3])
  })

  it('let only one of two identical removals succeed', async () => {
    const responses = await Promise.all([remove(roles.acmeSeller, accounts.acme2), remove(roles.acmeSeller, accounts.acme2)])
    expect(responses.map((response) => response.statusCode).sort()).toEqual([204, 404])
  })
})

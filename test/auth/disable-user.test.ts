import { describe, expect, it } from 'vitest'
import { disableUser, userReference, type UserReference } from '../../src/auth/disable-user.js'
import { emailDigest } from '../../src/observability/audit.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

/*
 * The work of `npm run disable-user`, in the test's process and seen through HTTP: the command
 * itself (its arguments, output and exit codes, as a process) is test/observability/disable-user.test.ts.
 */
const context = useTestApp()
const { users } = DEMO
const BOB = 'bob@beta.example'

describe('which user a text names, as the logs name them', () => {
  it('a user id (any case), the 16 hex digits of an email_digest, or an e-mail (trimmed, lower-cased); nothing else', () => {
    expect(userReference(` ${users.bob.toUpperCase()} `)).toEqual({ id: users.bob })
    expect(userReference(` ${emailDigest(BOB)} `)).toEqual({ emailDigest: emailDigest(BOB) })
    expect(userReference(' Bob@Beta.example ')).toEqual({ email: BOB })
    for (const text of [
      'bob',
      '',
      '   ',
      emailDigest(BOB).toUpperCase(),
      emailDigest(BOB).slice(1),
      `${emailDigest(BOB)}0`,
      `x${emailDigest(BOB)}`,
      `${users.bob}0`,
      `x${users.bob}`,
      users.bob.replace(/-/g, ''),
    ]) {
      expect(userReference(text), text).toBeUndefined()
    }
  })
})

describe('disabling a user', () => {
  const references: [string, UserReference][] = [
    ['a user id', { id: users.bob }],
    ['an e-mail', { email: BOB }],
    ['an email_digest', { emailDigest: emailDigest(BOB) }],
  ]

  for (const [name, reference] of references) {
    it(`by ${name}: their tokens stop at once, each of their families is revoked and counted, nobody else's`, async () => {
      const { db } = await testDatabase()
      const first = await obtainTokens(context.app, BOB, DEMO_PASSWORD)
      await obtainTokens(context.app, BOB, DEMO_PASSWORD)
      const alice = await obtainTokens(context.app, 'alice@acme.example', DEMO_PASSWORD)
      const companies = (access: string) => context.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })

      expect(await disableUser(db, reference)).toEqual({ disabled: { userId: users.bob, families: 2 } })
      problemOf(await companies(first.access), 401, 'token_not_valid')
      const refresh = await context.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: first.refresh } })
      expect(refresh.statusCode).toBe(401)
      expect(
        (await context.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email: BOB, password: DEMO_PASSWORD } })).statusCode,
      ).toBe(401)
      expect((await companies(alice.access)).statusCode).toBe(200)
      // Done once: nobody active is named any more, and nothing more is revoked.
      expect(await disableUser(db, reference)).toEqual({ matches: 0 })
    })
  }

  it('disables nobody for a reference no active user has', async () => {
    const { db } = await testDatabase()
    const activeUsers = async () =>
      (await db.selectFrom('users').select('id').where('is_active', '=', true).orderBy('id').execute()).map((row) => row.id)
    const before = await activeUsers()
    for (const reference of [
      { id: '10000000-0000-4000-8000-0000000000ff' },
      { email: 'nobody@nowhere.example' },
      { emailDigest: '0123456789abcdef' },
    ]) {
      expect(await disableUser(db, reference)).toEqual({ matches: 0 })
    }
    expect(await activeUsers()).toEqual(before)
  })
})

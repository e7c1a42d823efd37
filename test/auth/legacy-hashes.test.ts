import { describe, expect, it } from 'vitest'
import { problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import { djangoHash, insertMigratedUser } from '../helpers/django-hashes.js'

/*
 * A migrated account logs in with the password its Django hash was made of, whichever of Django's
 * hashers made it, and from then on with the service's own argon2id hash (upgraded at that login).
 * The time each costs: test/reliability/legacy-login-timing.test.ts.
 */
const context = useTestApp()
const PASSWORD = 'the old password'

const login = (email: string, password: string) => context.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email, password } })
const storedHash = async (email: string) =>
  (await (await testDatabase()).db.selectFrom('users').select('password_hash').where('email', '=', email).executeTakeFirstOrThrow()).password_hash

describe("a migrated account's Django password hash", () => {
  const hashers: [string, () => Promise<string> | string][] = [
    ['pbkdf2_sha256', () => djangoHash.pbkdf2Sha256(PASSWORD, 1_000)],
    ['argon2', () => djangoHash.argon2(PASSWORD)],
    ['bcrypt_sha256', () => djangoHash.bcryptSha256(PASSWORD)],
    ['bcrypt', () => djangoHash.bcrypt(PASSWORD)],
  ]

  for (const [name, hash] of hashers) {
    it(`${name}: refuses another password, lets the right one in, and is replaced by the service's argon2id at that login`, async () => {
      const email = await insertMigratedUser(await hash())
      const legacy = await storedHash(email)
      expect(legacy.startsWith(`${name}$`)).toBe(true)
      problemOf(await login(email, 'not the old password'), 401, 'no_active_account')
      expect(await storedHash(email)).toBe(legacy)
      expect((await login(email, PASSWORD)).statusCode).toBe(200)
      expect(await storedHash(email)).toMatch(/^\$argon2id\$/)
      expect((await login(email, PASSWORD)).statusCode).toBe(200)
    })
  }

  it('of a format nobody knows, or unusable (Django marks it with "!"), never matches', async () => {
    for (const stored of ['!unusable', `md5$salt$${'0'.repeat(32)}`, PASSWORD]) {
      problemOf(await login(await insertMigratedUser(stored), PASSWORD), 401, 'no_active_account')
    }
  })
})

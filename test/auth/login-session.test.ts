import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createLoginSession } from '../../src/tokens/repository.js'
import { newJti } from '../../src/tokens/tokens.js'
import { DEMO, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

useTestApp()

/** The login's one write, as routes 1 and 2 make it after the password check. */
async function logInAs(userId: string) {
  const { db } = await testDatabase()
  const familyId = randomUUID()
  const session = await createLoginSession(db, {
    userId,
    familyId,
    jti: newJti(),
    absoluteTtlSeconds: 3_600,
    expiresAt: new Date(Date.now() + 60_000),
    newPasswordHash: null,
  })
  const families = await db.selectFrom('token_families').select('user_id').where('id', '=', familyId).execute()
  return { session, families }
}

describe('the login statement (routes 1 and 2, after the password check)', () => {
  it('records the login and starts a family for an active user', async () => {
    const { session, families } = await logInAs(DEMO.users.dave)
    expect(session).toBeDefined()
    expect(Math.abs(session!.lastLogin.getTime() - Date.now())).toBeLessThan(60_000)
    expect(session!.expiresAt.getTime()).toBeGreaterThan(Date.now())
    expect(families).toEqual([{ user_id: DEMO.users.dave }])
  })

  it('starts no session for a user disabled since the check, nor one awaiting migration', async () => {
    for (const userId of [DEMO.users.frank, DEMO.users.maria]) {
      const { db } = await testDatabase()
      const before = await db.selectFrom('users').select('last_login').where('id', '=', userId).executeTakeFirstOrThrow()
      const { session, families } = await logInAs(userId)
      expect(session).toBeUndefined()
      expect(families).toEqual([])
      const after = await db.selectFrom('users').select('last_login').where('id', '=', userId).executeTakeFirstOrThrow()
      expect(after.last_login).toEqual(before.last_login)
    }
  })
})

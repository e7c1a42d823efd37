import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { testDatabase } from '../helpers/database.js'
import { bearer, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { decodeClaims } from '../helpers/jwt.js'

/**
 * Issue 45: every authenticated request reads its token family's row, so a refresh must not
 * rewrite it (migration 0014 keeps the rotating part in `token_family_rotations`). What a rotation
 * decides must not change: a revocation still leaves it nothing to spend.
 */
const ctx = useTestApp()
const refresh = (token: string) => ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
const companies = (access: string) => ctx.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })

/** The physical version of a family's row: another after any UPDATE of it. */
async function familyRowVersion(familyId: string): Promise<string> {
  const { db } = await testDatabase()
  const { rows } = await sql<{ version: string }>`
    SELECT ctid::text || '/' || xmin::text AS version FROM token_families WHERE id = ${familyId}`.execute(db)
  return rows[0]!.version
}

describe('a refresh and the row every request reads', () => {
  it('leaves the family row that admission reads untouched, however many times the family rotates', async () => {
    let tokens = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const familyId = String(decodeClaims(tokens.refresh).fid)
    const before = await familyRowVersion(familyId)
    for (let n = 0; n < 5; n += 1) {
      const response = await refresh(tokens.refresh)
      expect(response.statusCode).toBe(200)
      tokens = response.json()
    }
    expect(await familyRowVersion(familyId)).toBe(before)
    expect((await companies(tokens.access)).statusCode).toBe(200)
  })

  it('gives a rotation that waited on a revocation nothing to spend once the revocation commits', async () => {
    const tokens = await obtainTokens(ctx.app, 'bob@beta.example', DEMO_PASSWORD)
    const familyId = String(decodeClaims(tokens.refresh).fid)
    const { db } = await testDatabase()
    await db.transaction().execute(async (trx) => {
      await trx.updateTable('token_families').set({ revoked_at: new Date(), revoked_reason: 'logout' }).where('id', '=', familyId).execute()
      const { rows } = await sql<{ current: string | null }>`
          SELECT current_refresh_jti AS current FROM token_family_rotations WHERE family_id = ${familyId}`.execute(trx)
      expect(rows).toEqual([{ current: null }])
    })
    problemOf(await refresh(tokens.refresh), 401, 'token_not_valid')
    problemOf(await companies(tokens.access), 401, 'token_not_valid')
  })
})

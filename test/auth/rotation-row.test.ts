import { sql } from 'kysely'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { testDatabase, workerSchema } from '../helpers/database.js'
import { bearer, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { decodeClaims } from '../helpers/jwt.js'

/**
 * Issue 45: every authenticated request reads its token family's row, so a refresh must not
 * rewrite it (migration 0016 keeps the rotating part in `token_family_rotations`). What a rotation
 * decides must not change: a revocation still leaves it nothing to spend.
 */
const ctx = useTestApp()
const refresh = (token: string) => ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
const companies = (access: string) => ctx.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })

/** A connection of the test's own on the worker's schema, to hold a revocation open. */
async function holder(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL, options: `-c search_path=${workerSchema()}` })
  await client.connect()
  return client
}

/** Some statement waits on a lock `client` holds. */
async function waitsOn(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ waiting: number }>(
    'SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))',
  )
  return rows[0]!.waiting > 0
}

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

  // One connection on PGlite: nothing can wait on a row lock there.
  it.runIf(process.env.TEST_DATABASE_URL)('gives a rotation that waited on a revocation nothing to spend once the revocation commits', async () => {
    const tokens = await obtainTokens(ctx.app, 'bob@beta.example', DEMO_PASSWORD)
    const familyId = String(decodeClaims(tokens.refresh).fid)
    const client = await holder()
    let answer
    try {
      await client.query('BEGIN')
      await client.query(`UPDATE token_families SET revoked_at = now(), revoked_reason = 'logout' WHERE id = $1`, [familyId])
      const pending = refresh(tokens.refresh)
      let answered = false
      void pending.then(() => (answered = true))
      // Until the refresh waits on the revocation (or, wrongly, has answered already).
      while (!answered && !(await waitsOn(client))) await new Promise((resolve) => setImmediate(resolve))
      expect(answered).toBe(false)
      await client.query('COMMIT')
      answer = await pending
    } finally {
      await client.end()
    }
    problemOf(answer, 401, 'token_not_valid')
    problemOf(await companies(tokens.access), 401, 'token_not_valid')
  })
})

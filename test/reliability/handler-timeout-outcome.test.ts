import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf } from '../helpers/app.js'
import { resetDatabase, testDatabase, workerSchema } from '../helpers/database.js'
import { linkFor, storedUser, tokenFamilies } from '../registration/links.js'

const databaseUrl = process.env.TEST_DATABASE_URL

/** What the 503 says when it cannot tell that nothing happened (src/plugins/errors.ts). */
const MAY_HAVE_BEEN_APPLIED = /may have been applied/

/*
 * HANDLER_TIMEOUT answers a request still running; what its 503 says must be true of the database
 * (issue 32, item 5): a transaction whose COMMIT was not sent is closed with the answer and never
 * commits, so "try again" is safe; once COMMIT was sent, the answer says the request may have been
 * applied. Route 10 is one transaction: it locks the user's row, confirms the account, opens a session.
 */
describe.skipIf(!databaseUrl)('what a 503 at HANDLER_TIMEOUT says about the writes (real PostgreSQL)', () => {
  let app: FastifyInstance

  beforeAll(async () => {
    app = await buildTestApp({ HANDLER_TIMEOUT: '1s' })
  })
  beforeEach(async () => {
    await resetDatabase()
  })
  afterAll(async () => {
    await app.close()
  })

  const confirm = async () => app.inject({ method: 'POST', url: await linkFor('maria@legacy.example'), payload: {} })
  const confirmed = async () => (await storedUser(DEMO.users.maria)).migration_state === 'confirmed'

  it('closes a transaction that had not sent COMMIT: nothing commits after the 503, which says to try again', async () => {
    const holder = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${workerSchema()}` })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [DEMO.users.maria])
      const body = problemOf(await confirm(), 503, 'service_unavailable')
      expect(body.detail).toBe('The service is temporarily unavailable; try again shortly.')
    } finally {
      await holder.query('ROLLBACK')
      await holder.end()
    }
    // Were the transaction still open, it would take the lock now and commit.
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(await confirmed()).toBe(false)
    expect(await tokenFamilies(DEMO.users.maria)).toBe(0)
  })

  it('says the request may have been applied when its COMMIT was in flight, and it was', async () => {
    const { db } = await testDatabase()
    // A deferred constraint trigger runs at COMMIT: here it holds the COMMIT past HANDLER_TIMEOUT.
    await sql`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(2); RETURN NULL; END $$`.execute(db)
    await sql`CREATE CONSTRAINT TRIGGER slow_commit AFTER UPDATE ON users DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()`.execute(
      db,
    )
    try {
      const body = problemOf(await confirm(), 503, 'service_unavailable')
      expect(body.detail).toMatch(MAY_HAVE_BEEN_APPLIED)
      for (const end = Date.now() + 5_000; !(await confirmed()) && Date.now() < end;) await new Promise((resolve) => setTimeout(resolve, 50))
      expect(await confirmed()).toBe(true)
      expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
    } finally {
      await sql`DROP TRIGGER slow_commit ON users`.execute(db)
      await sql`DROP FUNCTION slow_commit()`.execute(db)
    }
  })
})

/*
 * Routes 1 to 3 (issue 42, item 10): a login or a refresh answered 503 at HANDLER_TIMEOUT while its
 * write waits commits nothing: no token family, no last_login moved, no rotation, as route 10.
 */
describe.skipIf(!databaseUrl)('a login or a refresh answered 503 at HANDLER_TIMEOUT commits nothing (real PostgreSQL)', () => {
  let bounded: FastifyInstance
  let unbounded: FastifyInstance

  beforeAll(async () => {
    // Long enough for the password check on a busy machine: the bound runs out while the write waits.
    bounded = await buildTestApp({ HANDLER_TIMEOUT: '3s', LOGIN_BURST_WAIT: '1s' })
    unbounded = await buildTestApp()
  })
  beforeEach(async () => {
    await resetDatabase()
  })
  afterAll(async () => {
    await Promise.all([bounded.close(), unbounded.close()])
  })

  /** Runs `request` while another session holds `lockSql`'s row, waiting until the request's write waits for it. */
  async function whileRowHeld(lockSql: string, id: string, request: () => Promise<ReturnType<typeof problemOf>>) {
    const holder = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${workerSchema()}` })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query(lockSql, [id])
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
      const answered = request()
      const { db } = await testDatabase()
      // The request's statement waits for the holder's lock (an event of the server's, not a sleep).
      for (;;) {
        const { rows } = await sql<{
          waiting: number
        }>`SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE ${holderPid}::int = ANY(pg_blocking_pids(pid))`.execute(db)
        if (rows[0]!.waiting > 0) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      return await answered
    } finally {
      await holder.query('ROLLBACK')
      await holder.end()
    }
  }

  it.each(['/api/auth/v1/token', '/api/auth/v1/login'])('%s: no session, last_login unmoved, and the 503 says to try again', async (url) => {
    const before = (await storedUser(DEMO.users.alice)).last_login
    const body = await whileRowHeld('SELECT id FROM users WHERE id = $1 FOR UPDATE', DEMO.users.alice, async () =>
      problemOf(
        await bounded.inject({ method: 'POST', url, payload: { email: 'alice@acme.example', password: DEMO_PASSWORD } }),
        503,
        'service_unavailable',
      ),
    )
    expect(body.detail).toBe('The service is temporarily unavailable; try again shortly.')
    // Were its statement still to commit, it would take the lock now.
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(await tokenFamilies(DEMO.users.alice)).toBe(0)
    expect((await storedUser(DEMO.users.alice)).last_login).toEqual(before)
  })

  it('/api/auth/v1/token/refresh: the token is not spent, and the 503 says to try again', async () => {
    const { refresh } = await obtainTokens(unbounded, 'alice@acme.example', DEMO_PASSWORD)
    const { db } = await testDatabase()
    const family = await db
      .selectFrom('token_families')
      .innerJoin('token_family_rotations', 'token_family_rotations.family_id', 'token_families.id')
      .select(['id', 'current_refresh_jti'])
      .where('user_id', '=', DEMO.users.alice)
      .executeTakeFirstOrThrow()
    // A rotation writes the family's rotation row (migration 0016): held, the refresh waits on it.
    const body = await whileRowHeld('SELECT family_id FROM token_family_rotations WHERE family_id = $1 FOR UPDATE', family.id, async () =>
      problemOf(await bounded.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh } }), 503, 'service_unavailable'),
    )
    expect(body.detail).toBe('The service is temporarily unavailable; try again shortly.')
    await new Promise((resolve) => setTimeout(resolve, 500))
    const after = await db
      .selectFrom('token_family_rotations')
      .select('current_refresh_jti')
      .where('family_id', '=', family.id)
      .executeTakeFirstOrThrow()
    expect(after.current_refresh_jti).toBe(family.current_refresh_jti)
    // The token is still the family's current one: its refresh is a rotation, not a retry.
    expect((await unbounded.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh } })).statusCode).toBe(200)
  })
})

import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { buildTestApp, DEMO, problemOf } from '../helpers/app.js'
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

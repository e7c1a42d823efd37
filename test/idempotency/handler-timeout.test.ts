import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { buildTestApp, DEMO, problemOf, useTestApp } from '../helpers/app.js'
import { createPostgresDatabase } from '../../src/db/database.js'
import { workerSchema } from '../helpers/database.js'
import { linkFor, storedUser, tokenFamilies } from '../registration/links.js'
import { keptKeys, newKey, post } from './helpers.js'

const databaseUrl = process.env.TEST_DATABASE_URL
const context = useTestApp({ HANDLER_TIMEOUT: '300ms' })

/** Holds maria's row locked, as route 10's transaction would, while `during` runs. */
async function withUserLocked(during: () => Promise<void>): Promise<void> {
  const holder = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${workerSchema()}` })
  await holder.connect()
  try {
    await holder.query('BEGIN')
    await holder.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [DEMO.users.maria])
    await during()
  } finally {
    await holder.query('ROLLBACK')
    await holder.end()
  }
}

async function confirmedWithin(ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 20))) {
    if ((await storedUser(DEMO.users.maria)).migration_state === 'confirmed') return true
  }
  return false
}

describe.runIf(!databaseUrl)('Idempotency-Key and a request past HANDLER_TIMEOUT', () => {
  it.skip('needs a real PostgreSQL: another connection holds the row the request waits for', () => undefined)
})

describe.skipIf(!databaseUrl)('Idempotency-Key and a request past HANDLER_TIMEOUT (real PostgreSQL)', () => {
  it('commits nothing of a request answered 503 past HANDLER_TIMEOUT: a retry is 409 while it still runs, then runs once', async () => {
    const url = await linkFor('maria@legacy.example')
    const key = newKey()
    // Route 10 locks the user's row: held here, the request outlives HANDLER_TIMEOUT and is answered 503.
    await withUserLocked(async () => {
      problemOf(await post(context.app, url, undefined, {}, key), 503, 'service_unavailable')
      expect(await keptKeys()).toEqual([])
      // Its transaction still holds the key while its statement waits: never a second run meanwhile.
      const running = problemOf(await post(context.app, url, undefined, {}, key), 409, 'idempotency_key_in_use')
      expect(running).toBeDefined()
    })
    // The handler goes on once the row is free, but its transaction was rolled back with the 503: no confirmation.
    expect(await confirmedWithin(1_000)).toBe(false)
    const retry = await post(context.app, url, undefined, {}, key)
    expect([retry.statusCode, retry.headers['idempotent-replayed']]).toEqual([201, undefined])
    expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
    const again = await post(context.app, url, undefined, {}, key)
    expect([again.statusCode, again.headers['idempotent-replayed'], again.body]).toEqual([201, 'true', retry.body])
  })

  it('gives the key back after a 503 that did nothing (a statement past its timeout): the retry runs', async () => {
    // A pool of its own: the statement bound belongs to the pool, not to the app.
    const handle = createPostgresDatabase({ connectionString: databaseUrl!, poolSize: 2, schema: workerSchema(), statementTimeoutMs: 300 })
    const app = await buildTestApp({}, { database: handle })
    try {
      const url = await linkFor('maria@legacy.example')
      const key = newKey()
      await withUserLocked(async () => {
        problemOf(await post(app, url, undefined, {}, key), 503, 'service_unavailable')
      })
      expect(await keptKeys()).toEqual([])
      const retry = await post(app, url, undefined, {}, key)
      expect([retry.statusCode, retry.headers['idempotent-replayed']]).toEqual([201, undefined])
      expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
    } finally {
      await app.close()
      await handle.db.destroy()
    }
  })
})

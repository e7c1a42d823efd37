import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { createPostgresDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { resetDatabase, testDatabase, workerSchema } from '../helpers/database.js'

const serverUrl = process.env.TEST_DATABASE_URL
const { roles, titles } = DEMO
const BOB_QUEUED = 6

describe.runIf(!serverUrl)('database connections taken in turn per caller', () => {
  it.skip('needs a real PostgreSQL: another connection locks a table that one caller reads', () => undefined)
})

/**
 * One connection; bob's reads of route 9 wait on a lock another connection holds (one on the
 * connection, the rest queued for it), then alice asks for route 4. When the lock goes, alice is
 * served second, not after bob's whole queue (src/db/fair-gate.ts).
 */
describe.skipIf(!serverUrl)('database connections taken in turn per caller (real PostgreSQL)', () => {
  let app: FastifyInstance
  let handle: DatabaseHandle

  beforeAll(async () => {
    await testDatabase()
    await resetDatabase()
    handle = createPostgresDatabase({ connectionString: serverUrl!, poolSize: 1, schema: workerSchema(), connectTimeoutMs: 30_000 })
    app = await buildTestApp({}, { database: handle })
  })
  afterAll(async () => {
    await app?.close()
    await handle?.db.destroy()
  })

  it("serves another caller's first request before the rest of one caller's queue", async () => {
    const alice = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    const bob = await obtainTokens(app, 'bob@beta.example', DEMO_PASSWORD)
    const holder = new pg.Client({ connectionString: serverUrl, options: `-c search_path=${workerSchema()}` })
    await holder.connect()
    const answered: string[] = []
    const ask = (who: string, url: string, token: string) =>
      app.inject({ method: 'GET', url, headers: bearer(token) }).then((response) => {
        answered.push(`${who} ${response.statusCode}`)
      })
    try {
      await holder.query('BEGIN')
      await holder.query('LOCK TABLE titles IN ACCESS EXCLUSIVE MODE')
      const bobs = Array.from({ length: BOB_QUEUED }, () =>
        ask('bob', `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`, bob.access),
      )
      // One of bob's on the connection, waiting for the lock; the others waiting for the connection.
      await vi.waitFor(() => expect(handle.pool!.waitingCount, "bob's requests queued for the connection").toBe(BOB_QUEUED - 1), {
        timeout: 30_000,
        interval: 20,
      })
      const alices = ask('alice', '/api/company/v1/get-user-companies', alice.access)
      await vi.waitFor(() => expect(handle.pool!.waitingCount, "alice's request queued behind them").toBe(BOB_QUEUED), {
        timeout: 30_000,
        interval: 20,
      })
      await holder.query('ROLLBACK')
      await Promise.all([...bobs, alices])
    } finally {
      await holder.end()
    }
    expect(answered.slice(0, 2)).toEqual(['bob 200', 'alice 200'])
    expect(answered.filter((answer) => answer === 'bob 200')).toHaveLength(BOB_QUEUED)
  })
})

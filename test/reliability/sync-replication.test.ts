import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedDemoData } from '../../db/seed/demo.js'
import { startSession } from '../../src/tokens/sessions.js'
import { createPostgresDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db/database.js'
import { buildTestApp, DEMO, problemOf } from '../helpers/app.js'
import { openPostgres, workerSchema } from '../helpers/database.js'
import { cnpj, customerUrl, isReplay, newKey, post } from '../idempotency/helpers.js'
import { startStreamingCluster, streamingUnavailable } from '../topology/streaming.js'

/**
 * A COMMIT whose wait for the synchronous standby is cancelled (issue 33): PostgreSQL answers it
 * with the warning "canceling wait for synchronous replication" after committing locally. It must
 * be a 503 "may have been applied", never a durable success nor "nothing happened".
 *
 * It needs a server whose `synchronous_standby_names` names a standby that never connects, so that
 * every synchronous commit waits, with `synchronous_commit=local` by default for the set-up (the
 * service's connections ask for `on`). In the PostgreSQL run (TEST_DATABASE_URL) it makes one
 * (initdb, as the replica tests do); TEST_SYNC_REP_URL names one of your own instead.
 */
const ownServer = process.env.TEST_SYNC_REP_URL
const unavailable = ownServer
  ? undefined
  : process.env.TEST_DATABASE_URL
    ? streamingUnavailable()
    : 'synchronous replication tests skipped: they run with TEST_DATABASE_URL (the PostgreSQL run) or TEST_SYNC_REP_URL'
if (unavailable) process.stderr.write(`${unavailable}\n`)
const schema = `${workerSchema()}_syncrep`

/** A server of its own whose synchronous commits wait for a standby that never comes; its URL. */
async function serverWaitingForAStandby(): Promise<{ url: string; stop(): Promise<void> }> {
  const cluster = await startStreamingCluster([], async () => undefined)
  await cluster.sql(0, "ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
  await cluster.sql(0, "ALTER SYSTEM SET synchronous_commit = 'local'")
  await cluster.sql(0, 'SELECT pg_reload_conf()')
  return { url: cluster.url(0, 'postgres'), stop: () => cluster.stop() }
}

describe.skipIf(unavailable !== undefined)('a commit not confirmed by the synchronous standby (issue 33)', () => {
  let server: { url: string; stop(): Promise<void> } | undefined
  let admin: DatabaseHandle
  let app: FastifyInstance
  let access: string

  beforeAll(async () => {
    if (!ownServer) server = await serverWaitingForAStandby()
    const url = ownServer ?? server!.url
    admin = await openPostgres(url, schema, 2)
    await migrateToLatest(admin.db, schema)
    await seedDemoData(admin.db)
    const service = new URL(url)
    service.searchParams.set('options', '-c synchronous_commit=on')
    const database = createPostgresDatabase({ connectionString: service.toString(), poolSize: 4, schema, preparedStatements: true })
    app = await buildTestApp({}, { database })
    access = (await startSession(admin.db, app.tokens, DEMO.users.alice, 3600)).access
  })

  afterAll(async () => {
    await app?.close()
    await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(admin.db)
    await admin?.db.destroy()
    await server?.stop()
  })

  /** Cancels each wait for the standby as soon as one shows, until `done`. */
  function cancelWaits(done: Promise<unknown>): Promise<number> {
    let finished = false
    void done.finally(() => (finished = true))
    return (async () => {
      let cancelled = 0
      while (!finished) {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*) FILTER (WHERE pg_cancel_backend(pid))::int AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'`.execute(admin.db)
        cancelled += rows[0]?.n ?? 0
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      return cancelled
    })()
  }

  it('answers a keyed request 503 "may have been applied"; the retry with the key replays what was committed', async () => {
    const id = randomUUID()
    const key = newKey()
    const body = { name: 'Sync Rep', tax_id: cnpj(11_444_777_0000) }
    const sent = post(app, customerUrl(id), access, body, key)
    expect(await cancelWaits(sent)).toBeGreaterThan(0)
    const answer = await sent
    const problem = problemOf(answer, 503, 'service_unavailable')
    expect(problem.detail).toMatch(/may have been applied.*same Idempotency-Key/)
    expect(answer.headers['retry-after']).toBeDefined()
    // Committed on the primary: the retry replays it, and runs nothing again.
    const retry = post(app, customerUrl(id), access, body, key)
    void cancelWaits(retry)
    const replay = await retry
    expect([replay.statusCode, isReplay(replay)]).toEqual([201, true])
    expect(replay.json<{ id: string }>().id).toBe(id)
  })

  it('answers a request without a key 503 "may have been applied", never a success nor "nothing was done"', async () => {
    const id = randomUUID()
    const sent = post(app, customerUrl(id), access, { name: 'Sync Rep Unkeyed', tax_id: cnpj(11_444_777_0001) }, undefined)
    expect(await cancelWaits(sent)).toBeGreaterThan(0)
    const problem = problemOf(await sent, 503, 'service_unavailable')
    expect(problem.detail).toMatch(/may have been applied/)
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM customers WHERE id = ${id}`.execute(admin.db)
    expect(rows[0]?.n).toBe(1)
  })
})

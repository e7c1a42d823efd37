import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedDemoData } from '../../db/seed/demo.js'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { createPostgresDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db/database.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { runSchemaPrefix } from '../helpers/database.js'
import { StatementLog } from '../platform/plan-check.js'

/*
 * Route 5 declares route 7's read (issue 36): the seller's KYC comes in the statement that admits
 * the buyer, so a solicitation is two statements, the admission and the insert, where it was three
 * (the seller read again on its own). Counted on the driver's log, which PGlite's dialect lacks.
 */

const databaseUrl = process.env.TEST_DATABASE_URL
const { roles } = DEMO

describe.skipIf(!databaseUrl)('route 5: round trips (real PostgreSQL)', () => {
  const schema = `${runSchemaPrefix(process.ppid)}route5trips`
  const log = new StatementLog()
  let handle: DatabaseHandle

  beforeAll(async () => {
    const admin = createPostgresDatabase({ connectionString: databaseUrl!, poolSize: 1 })
    await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(admin.db)
    await sql`CREATE SCHEMA ${sql.id(schema)}`.execute(admin.db)
    await admin.db.destroy()
    handle = createPostgresDatabase({ connectionString: databaseUrl!, poolSize: 2, schema, preparedStatements: true, log: log.log })
    await migrateToLatest(handle.db, schema)
    await seedDemoData(handle.db)
  }, 60_000)

  afterAll(async () => {
    await handle?.db.destroy()
    const admin = createPostgresDatabase({ connectionString: databaseUrl!, poolSize: 1 })
    await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(admin.db)
    await admin.db.destroy()
  })

  it('opens a solicitation in two statements: the admission with the seller, and the insert', async () => {
    const app = await buildTestApp({}, { database: handle, counterStore: new MemoryCounterStore() })
    try {
      const { access } = await log.as(null, () => obtainTokens(app, 'bob@beta.example', DEMO_PASSWORD))
      log.clear()
      const url = `/api/company/v1/${roles.betaBuyer}/document-solicitation/${roles.acmeSeller}`
      const response = await log.as('route 5', () => app.inject({ method: 'POST', url, headers: bearer(access), payload: {} }))
      expect(response.statusCode).toBe(201)
      const statements = [...log.statements.values()].filter((recorded) => recorded.routes.has('route 5'))
      expect(statements.map((recorded) => recorded.query.sql.trimStart().slice(0, 6).toLowerCase())).toEqual(['select', 'insert'])
    } finally {
      await app.close()
    }
  })
})

import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { createPostgresDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { DEMO } from '../helpers/app.js'
import { resetDatabase, testDatabase, workerSchema } from '../helpers/database.js'

const serverUrl = process.env.TEST_DATABASE_URL

// Prepared statements are a PostgreSQL-server feature of the pg driver; PGlite runs every query directly.
describe.skipIf(!serverUrl)('named prepared statements on PostgreSQL', () => {
  let handle: DatabaseHandle | undefined
  afterEach(async () => {
    await handle?.db.destroy()
  })

  const open = async (preparedStatements: boolean) => {
    await testDatabase()
    await resetDatabase()
    // One connection, so that the session whose statements are listed is the one that ran them.
    handle = createPostgresDatabase({ connectionString: serverUrl ?? '', poolSize: 1, schema: workerSchema(), preparedStatements })
    return handle.db
  }
  const lookUpAlice = (db: DatabaseHandle['db']) =>
    db.selectFrom('users').select('email').where('id', '=', DEMO.users.alice).executeTakeFirstOrThrow()
  const preparedInSession = async (db: DatabaseHandle['db']) =>
    (await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.execute(db)).rows.map((row) => row.statement)

  it('prepares each distinct query once per connection and reuses it', async () => {
    const db = await open(true)
    expect(await lookUpAlice(db)).toEqual({ email: 'alice@acme.example' })
    expect(await lookUpAlice(db)).toEqual({ email: 'alice@acme.example' })
    const statements = await preparedInSession(db)
    expect(statements.filter((statement) => statement.includes('from "users"'))).toHaveLength(1)
  })

  it('runs unnamed statements when switched off (PgBouncer in transaction mode)', async () => {
    const db = await open(false)
    await lookUpAlice(db)
    expect(await preparedInSession(db)).toEqual([])
  })

  const planCacheMode = async (db: DatabaseHandle['db']) =>
    (await sql<{ plan_cache_mode: string }>`SHOW plan_cache_mode`.execute(db)).rows[0]?.plan_cache_mode

  it('plans each prepared statement once (generic plans), and leaves the server default without them', async () => {
    expect(await planCacheMode(await open(true))).toBe('force_generic_plan')
    await handle?.db.destroy()
    expect(await planCacheMode(await open(false))).toBe('auto')
  })
})

import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { LogDestination } from '../../src/logging.js'
import { migrateToLatest, createPostgresDatabase } from '../../src/db/database.js'
import { seedDemoData } from '../../db/seed/demo.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { preparedStatementsUnavailable, startPgBouncer, type PgBouncer } from './pgbouncer.js'
import { recreateDatabase, run, topologyUnavailable } from './topology.js'

const unavailable = topologyUnavailable()

/**
 * PGBOUNCER_BINARY chooses the PgBouncer of these tests (default: Debian's 1.18, as in CI); the case
 * of named prepared statements through the pooler runs only when that binary is ≥ 1.21.
 */
const preparedUnavailable = unavailable ?? preparedStatementsUnavailable()

/**
 * The service on PgBouncer in transaction mode, as configured wrongly: what the pooler
 * refuses is logged at error level as a configuration error naming its fix, readiness says so,
 * and the service keeps working.
 */
describe.skipIf(unavailable !== undefined)('behind PgBouncer, a setting the pooler refuses', () => {
  const serverUrl = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://x@127.0.0.1/x')
  const database = `${decodeURIComponent(serverUrl.pathname.slice(1))}_pooler`
  let bouncer: PgBouncer
  let app: FastifyInstance | undefined
  const lines: string[] = []
  const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }

  beforeAll(async () => {
    await recreateDatabase(serverUrl.toString(), database)
    // max_prepared_statements = 0: what a PgBouncer ≥ 1.21 without it does, as 1.18 (1.22+ default to 200).
    bouncer = await startPgBouncer(serverUrl.toString(), preparedStatementsUnavailable() === undefined ? { max_prepared_statements: '0' } : {})
    // What `npm run migrate` and `npm run seed` do, through the pooler.
    const handle = createPostgresDatabase({ connectionString: bouncer.url(database), poolSize: 1 })
    await migrateToLatest(handle.db)
    await seedDemoData(handle.db)
    await handle.db.destroy()
  })

  afterEach(async () => {
    await app?.close()
    app = undefined
    lines.length = 0
  })

  afterAll(async () => {
    await bouncer?.stop()
  })

  const start = async (env: Record<string, string>) => {
    app = await buildTestApp(
      { LOG_LEVEL: 'warn', DATABASE_URL: bouncer.url(database), ...env },
      { database: 'config', conformance: false, logDestination },
    )
    return app
  }
  const configurationErrors = () =>
    lines.map((line) => JSON.parse(line) as { level: number; msg: string; configurationError?: boolean }).filter((line) => line.configurationError)

  it('names the ALTER ROLE that gives statement_timeout, keeps serving, and readiness lists it at once', async () => {
    const service = await start({ DATABASE_PREPARED_STATEMENTS: 'false' })
    const ready = await service.inject({ method: 'GET', url: '/health/ready' })
    expect(ready.statusCode).toBe(200)
    const [problem] = ready.json().configuration_errors as string[]
    expect(problem).toContain("ALTER ROLE postgres SET statement_timeout = '5000ms'")
    expect(problem).not.toContain('plan_cache_mode') // unnamed statements are planned on every run anyway
    expect(configurationErrors()).toEqual([
      expect.objectContaining({ level: 50, msg: expect.stringContaining('ALTER ROLE postgres SET statement_timeout') }),
    ])
    const { access } = await obtainTokens(service, 'alice@acme.example', DEMO_PASSWORD)
    expect((await service.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })).statusCode).toBe(200)
  })

  it('reports prepared statements lost between transactions with DATABASE_PREPARED_STATEMENTS=false as the fix, then runs without them', async () => {
    const service = await start({ DATABASE_PREPARED_STATEMENTS: 'true', DATABASE_POOL_SIZE: '4' })
    const { access } = await obtainTokens(service, 'alice@acme.example', DEMO_PASSWORD)
    const read = () => service.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })
    // Concurrent requests land on different server connections, where the names are unknown.
    let statuses: number[] = []
    for (let round = 0; round < 10 && !configurationErrors().some((line) => line.msg.includes('DATABASE_PREPARED_STATEMENTS=false')); round++) {
      statuses = (await Promise.all(Array.from({ length: 8 }, read))).map((response) => response.statusCode)
      expect(statuses.every((status) => status === 200 || status === 503)).toBe(true)
    }
    expect(configurationErrors().map((line) => line.msg)).toContainEqual(expect.stringContaining('DATABASE_PREPARED_STATEMENTS=false'))
    const ready = await service.inject({ method: 'GET', url: '/health/ready' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json().configuration_errors).toContainEqual(expect.stringContaining('DATABASE_PREPARED_STATEMENTS=false'))
    statuses = (await Promise.all(Array.from({ length: 8 }, read))).map((response) => response.statusCode)
    expect(statuses).toEqual(Array(8).fill(200))
  })

  it('ends a transaction waiting on a lock at DATABASE_STATEMENT_TIMEOUT on the server, with no ALTER ROLE: each transaction sets its own', async () => {
    const service = await start({ DATABASE_PREPARED_STATEMENTS: 'false', DATABASE_STATEMENT_TIMEOUT: '1s' })
    const { access } = await obtainTokens(service, 'alice@acme.example', DEMO_PASSWORD)
    const direct = new URL(serverUrl)
    direct.pathname = `/${database}`
    const holder = new pg.Client({ connectionString: direct.toString() })
    await holder.connect()
    const waitingOnLocks = async () =>
      Number(
        (
          await holder.query<{ count: string }>(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
            [database],
          )
        ).rows[0]?.count,
      )
    try {
      // Route 8 locks the company's accounts in its transaction: held here, its statement waits.
      await holder.query('BEGIN')
      await holder.query('SELECT id FROM bank_accounts WHERE company_id = $1 FOR UPDATE', [DEMO.companies.acme])
      const url = `/api/company/v1/${DEMO.roles.acmeSeller}/bank-account/${DEMO.bankAccounts.acme2}`
      const response = await service.inject({ method: 'DELETE', url, headers: bearer(access) })
      expect(response.statusCode).toBe(503)
      // The server ended the waiting statement itself (SET LOCAL statement_timeout, sent with BEGIN):
      // the service's own timer alone would leave it waiting on the server, behind PgBouncer, until the lock went.
      let waiting = await waitingOnLocks()
      for (const end = Date.now() + 1_000; waiting > 0 && Date.now() < end; waiting = await waitingOnLocks()) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(waiting).toBe(0)
    } finally {
      await holder.query('ROLLBACK')
      await holder.end()
    }
  })

  it('names the fix when the options the operator put in DATABASE_URL are refused, and answers 503', async () => {
    const url = new URL(bouncer.url(database))
    url.searchParams.set('options', '-c synchronous_commit=off')
    const service = await start({ DATABASE_URL: url.toString(), DATABASE_PREPARED_STATEMENTS: 'false' })
    const ready = await service.inject({ method: 'GET', url: '/health/ready' })
    expect(ready.statusCode).toBe(503)
    expect(ready.json().detail).toContain('ALTER ROLE')
    expect(configurationErrors().map((line) => line.msg)).toContainEqual(expect.stringContaining('-c synchronous_commit=off'))
  })
})

/**
 * The service, `npm run migrate`, `seed` and `retention` on PgBouncer ≥ 1.21 in transaction mode with
 * max_prepared_statements and DATABASE_PREPARED_STATEMENTS=true: the named statements travel
 * between server connections (fewer than the service's), with no error and no configuration error.
 */
describe.skipIf(preparedUnavailable !== undefined)(
  `behind PgBouncer ≥ 1.21 with max_prepared_statements, DATABASE_PREPARED_STATEMENTS=true${preparedUnavailable ? ` (skipped: ${preparedUnavailable})` : ''}`,
  () => {
    const serverUrl = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://x@127.0.0.1/x')
    const database = `${decodeURIComponent(serverUrl.pathname.slice(1))}_pooler_prepared`
    let bouncer: PgBouncer
    let app: FastifyInstance | undefined
    const lines: string[] = []
    const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }
    const env = () => ({ DATABASE_URL: bouncer.url(database), DATABASE_PREPARED_STATEMENTS: 'true' })

    beforeAll(async () => {
      await recreateDatabase(serverUrl.toString(), database, [
        // The documented way to give the service its settings behind PgBouncer (docs/operations.md).
        `ALTER ROLE CURRENT_USER IN DATABASE "${database}" SET plan_cache_mode = force_generic_plan`,
        `ALTER ROLE CURRENT_USER IN DATABASE "${database}" SET statement_timeout = '5s'`,
      ])
      // Two server connections for the service's eight: each named statement runs on both, prepared
      // by PgBouncer on the server connection that lacks it.
      bouncer = await startPgBouncer(serverUrl.toString(), { max_prepared_statements: '200', default_pool_size: '2' })
      for (const command of ['migrate', 'seed', 'retention']) {
        await run(process.execPath, ['--import', 'tsx', `src/cli/${command}.ts`], env())
      }
    })

    afterAll(async () => {
      await app?.close()
      await bouncer?.stop()
    })

    it('answers concurrent requests of several routes with 0 errors, and readiness lists no configuration error', async () => {
      app = await buildTestApp({ LOG_LEVEL: 'warn', DATABASE_POOL_SIZE: '8', ...env() }, { database: 'config', conformance: false, logDestination })
      const service = app
      const { roles, titles } = DEMO
      const alice = await obtainTokens(service, 'alice@acme.example', DEMO_PASSWORD)
      const bob = await obtainTokens(service, 'bob@beta.example', DEMO_PASSWORD)
      const get = (token: string, url: string) => () => service.inject({ method: 'GET', url, headers: bearer(token) })
      const requests = [
        get(alice.access, '/api/company/v1/get-user-companies'),
        get(bob.access, `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}`),
        get(bob.access, `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`),
        get(bob.access, `/api/company/v1/${roles.betaBuyer}/chat/partners/${roles.acmeSeller}/presence`),
        () => service.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email: 'carol@gamma.example', password: DEMO_PASSWORD } }),
      ]
      const before = await parseCounts(bouncer)
      const failed: string[] = []
      for (let round = 0; round < 6; round++) {
        const responses = await Promise.all(Array.from({ length: 20 }, (_, index) => requests[index % requests.length]!()))
        for (const response of responses) {
          if (response.statusCode !== 200) failed.push(`${response.statusCode} ${response.body.slice(0, 200)}`)
        }
      }
      expect(failed).toEqual([])
      const ready = await service.inject({ method: 'GET', url: '/health/ready' })
      expect(ready.statusCode).toBe(200)
      expect(ready.json()).toEqual({ status: 'ok' })
      expect(lines.filter((line) => line.includes('configurationError'))).toEqual([])
      // The statements went through PgBouncer as named ones (Parse), and were bound far more often
      // than prepared on the server: each server connection prepared each text once.
      const after = await parseCounts(bouncer)
      const clientParses = after.clientParses - before.clientParses
      const serverParses = after.serverParses - before.serverParses
      const binds = after.binds - before.binds
      expect(clientParses).toBeGreaterThan(0)
      expect(binds).toBeGreaterThan(3 * serverParses)
    })
  },
)

/**
 * PgBouncer ≥ 1.20 takes `-c name=value` in the startup packet for the names in
 * track_extra_parameters, but applies only those the server reports (not plan_cache_mode nor
 * statement_timeout): the service checks its settings on its first connection and names the fix.
 */
describe.skipIf(preparedUnavailable !== undefined)(
  `behind PgBouncer ≥ 1.21, settings taken in the startup packet but not applied${preparedUnavailable ? ` (skipped: ${preparedUnavailable})` : ''}`,
  () => {
    const serverUrl = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://x@127.0.0.1/x')
    const database = `${decodeURIComponent(serverUrl.pathname.slice(1))}_pooler_tracked`
    let bouncer: PgBouncer
    let app: FastifyInstance | undefined

    beforeAll(async () => {
      await recreateDatabase(serverUrl.toString(), database)
      bouncer = await startPgBouncer(serverUrl.toString(), {
        max_prepared_statements: '200',
        track_extra_parameters: 'IntervalStyle, plan_cache_mode, statement_timeout',
      })
    })

    afterAll(async () => {
      await app?.close()
      await bouncer?.stop()
    })

    it('readiness names the ALTER ROLE for the settings not in effect', async () => {
      const lines: string[] = []
      app = await buildTestApp(
        { LOG_LEVEL: 'warn', DATABASE_URL: bouncer.url(database), DATABASE_PREPARED_STATEMENTS: 'true' },
        { database: 'config', conformance: false, logDestination: { write: (line: string) => void lines.push(line) } },
      )
      const ready = await app.inject({ method: 'GET', url: '/health/ready' })
      expect(ready.statusCode).toBe(200)
      const [problem] = ready.json().configuration_errors as string[]
      expect(problem).toContain('accepts the settings of the startup packet but does not apply them')
      expect(problem).toContain("ALTER ROLE postgres SET plan_cache_mode = 'force_generic_plan';")
      expect(problem).toContain("ALTER ROLE postgres SET statement_timeout = '5000ms';")
      expect(lines.filter((line) => line.includes('configurationError'))).toHaveLength(1)
    })
  },
)

/** PgBouncer's counts of prepared statements (SHOW STATS, ≥ 1.21), summed over its databases. */
async function parseCounts(bouncer: PgBouncer): Promise<{ clientParses: number; serverParses: number; binds: number }> {
  const { rows } = await bouncer.admin('SHOW STATS')
  const sum = (column: string) => rows.reduce((total: number, row: Record<string, unknown>) => total + Number(row[column] ?? 0), 0)
  return { clientParses: sum('total_client_parse_count'), serverParses: sum('total_server_parse_count'), binds: sum('total_bind_count') }
}

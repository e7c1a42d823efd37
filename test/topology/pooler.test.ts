import type { FastifyInstance } from 'fastify'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { LogDestination } from '../../src/logging.js'
import { migrateToLatest, createPostgresDatabase } from '../../src/db/database.js'
import { seedDemoData } from '../../db/seed/demo.js'
import { bearer, DEMO_PASSWORD, obtainTokens, testConfig } from '../helpers/app.js'
import { startPgBouncer, type PgBouncer } from './pgbouncer.js'
import { recreateDatabase, topologyUnavailable } from './topology.js'

const unavailable = topologyUnavailable()

/**
 * The service on PgBouncer 1.18 in transaction mode, as configured wrongly: what the pooler
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
    bouncer = await startPgBouncer(serverUrl.toString())
    // What `npm run migrate` and `npm run seed` do, through the pooler.
    const handle = createPostgresDatabase({ connectionString: bouncer.url(database), poolSize: 1 })
    await migrateToLatest(handle.db)
    await seedDemoData(handle.db)
    await handle.db.destroy()
  }, 60_000)

  afterEach(async () => {
    await app?.close()
    app = undefined
    lines.length = 0
  })

  afterAll(async () => {
    await bouncer?.stop()
  })

  const start = async (env: Record<string, string>) => {
    app = await buildApp(testConfig({ LOG_LEVEL: 'warn', DATABASE_URL: bouncer.url(database), ...env }), { logDestination })
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
    expect(configurationErrors()).toEqual([expect.objectContaining({ level: 50, msg: expect.stringContaining('ALTER ROLE postgres SET statement_timeout') })])
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

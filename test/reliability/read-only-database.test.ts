import { randomUUID } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedDemoData } from '../../db/seed/demo.js'
import { createPostgresDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db/database.js'
import { confirmationPath } from '../../src/registration/confirmation.js'
import { findUserForLink } from '../../src/registration/repository.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, type Tokens } from '../helpers/app.js'
import { unavailableCount } from '../helpers/metrics.js'
import { TEST_SECRETS } from '../helpers/secrets.js'
import { notification } from '../webhooks/helpers.js'

const serverUrl = process.env.TEST_DATABASE_URL

/*
 * A database that refuses writes: what a demoted primary, or a hot standby still behind the
 * read-write address, gives every session. `default_transaction_read_only` set on a database of
 * this test's own applies to connections opened after it, as a failover does to the new ones; the
 * connections already open keep what they had, which is why the service drops them.
 */
describe.skipIf(!serverUrl)('when the database refuses writes (read-only, a failover under way)', () => {
  const base = new URL(serverUrl ?? 'postgres://x@127.0.0.1/x')
  const database = `${decodeURIComponent(base.pathname.slice(1))}_readonly`
  const url = new URL(base)
  url.pathname = `/${database}`
  let admin: pg.Client
  let handle: DatabaseHandle
  let app: FastifyInstance
  let alice: Tokens
  let bob: Tokens
  let link: string

  const readOnly = (on: boolean) =>
    admin.query(
      on ? `ALTER DATABASE "${database}" SET default_transaction_read_only = on` : `ALTER DATABASE "${database}" RESET default_transaction_read_only`,
    )

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: serverUrl })
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    await admin.query(`CREATE DATABASE "${database}"`)
    const setup = createPostgresDatabase({ connectionString: url.toString(), poolSize: 1 })
    await migrateToLatest(setup.db)
    await seedDemoData(setup.db)
    // What the writes below need, made while the database takes writes (a login writes too).
    const maria = await findUserForLink(setup.db, 'maria@legacy.example')
    if (!maria) throw new Error('no demo user maria')
    link = confirmationPath(maria, TEST_SECRETS.LEGACY_SECRET_KEY)
    await setup.db.destroy()
    handle = createPostgresDatabase({ connectionString: url.toString(), poolSize: 4, preparedStatements: true, statementTimeoutMs: 5_000 })
    app = await buildTestApp({}, { database: handle })
    alice = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    bob = await obtainTokens(app, 'bob@beta.example', DEMO_PASSWORD)
  })

  afterAll(async () => {
    await readOnly(false)
    await app?.close()
    await handle?.db.destroy()
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    await admin.end()
  })

  const customer = (id: string, key?: string) =>
    app.inject({
      method: 'POST',
      url: `/api/company/v1/${DEMO.roles.acmeSeller}/customers/${id}`,
      headers: { ...bearer(alice.access), ...(key ? { 'idempotency-key': key } : {}) },
      payload: { name: 'Zeta Comércio', tax_id: '12345678909' },
    })
  const solicitation = (key?: string) =>
    app.inject({
      method: 'POST',
      url: `/api/company/v1/${DEMO.roles.betaBuyer}/document-solicitation/${DEMO.roles.gammaSeller}`,
      headers: { ...bearer(bob.access), ...(key ? { 'idempotency-key': key } : {}) },
      payload: { document_types: ['balance_sheet'] },
    })
  const writes: Record<string, () => Promise<LightMyRequestResponse>> = {
    'route 1 (login)': () =>
      app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email: 'carol@gamma.example', password: DEMO_PASSWORD } }),
    'route 3 (refresh)': () => app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: alice.refresh } }),
    'route 5': () => solicitation(),
    'route 5 with Idempotency-Key': () => solicitation(randomUUID()),
    'route 8': () =>
      app.inject({
        method: 'DELETE',
        url: `/api/company/v1/${DEMO.roles.acmeSeller}/bank-account/${DEMO.bankAccounts.acme2}`,
        headers: bearer(alice.access),
      }),
    'route 10': () => app.inject({ method: 'POST', url: link, payload: {} }),
    'route 10 with Idempotency-Key': () => app.inject({ method: 'POST', url: link, payload: {}, headers: { 'idempotency-key': randomUUID() } }),
    'route 11': () => customer(randomUUID()),
    'route 11 with Idempotency-Key': () => customer(randomUUID(), randomUUID()),
    'route 12 (webhook)': () =>
      app.inject({
        method: 'POST',
        url: `/webhook/esign/${TEST_SECRETS.ESIGN_WEBHOOK_SECRETS}/`,
        payload: notification('sign', new Date().toISOString(), { signer: 'x@y.example' }),
      }),
  }
  const reads = () => [
    app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(alice.access) }),
    app.inject({
      method: 'GET',
      url: `/api/company/v1/${DEMO.roles.betaBuyer}/buyer/check-documents/${DEMO.roles.acmeSeller}`,
      headers: bearer(bob.access),
    }),
    app.inject({ method: 'GET', url: `/api/v1/marketplace/${DEMO.roles.betaBuyer}/title/${DEMO.titles.t1}/documents`, headers: bearer(bob.access) }),
    app.inject({
      method: 'GET',
      url: `/api/company/v1/${DEMO.roles.betaBuyer}/chat/partners/${DEMO.roles.acmeSeller}/presence`,
      headers: bearer(bob.access),
    }),
  ]

  it('answers writes 503 with Retry-After and reads 200, is not ready, and takes writes again within seconds of the database', async () => {
    await readOnly(true)
    // A failover ends the sessions of the old primary; the pool's next connections are read-only ones.
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])
    await new Promise((resolve) => setTimeout(resolve, 200)) // the pool hears of its idle connections' end

    const answers: string[] = []
    for (const [name, write] of Object.entries(writes)) {
      const response = await write()
      answers.push(`${name}: ${response.statusCode} ${response.headers['retry-after'] ?? '-'} ${response.json<{ code?: string }>().code ?? ''}`)
      if (response.statusCode === 503) problemOf(response, 503, 'service_unavailable')
      expect(response.body).not.toMatch(/25006|read-only transaction|statusCode/)
    }
    expect(answers).toEqual(Object.keys(writes).map((name) => `${name}: 503 5 service_unavailable`))
    expect(await unavailableCount(app, 'read_only')).toBe(Object.keys(writes).length)

    expect((await Promise.all(reads())).map((response) => response.statusCode)).toEqual([200, 200, 200, 200])
    const ready = await app.inject({ method: 'GET', url: '/health/ready' })
    expect([ready.statusCode, ready.headers['retry-after'], ready.json().detail]).toEqual([
      503,
      '5',
      'The database refuses writes (read-only, or in recovery).',
    ])

    // Fill the pool with read-only sessions, as a failover leaves it: all idle, all to the old server.
    await Promise.all([...reads(), ...reads()])
    await readOnly(false)
    const back = Date.now()
    let status = 0
    while (status !== 200 && Date.now() - back < 5_000) {
      status = (await app.inject({ method: 'GET', url: '/health/ready' })).statusCode
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(status).toBe(200)
    // Ready means the pool holds no read-only connection: every write goes through at once.
    expect((await customer(randomUUID())).statusCode).toBe(201)
    expect((await solicitation(randomUUID())).statusCode).toBe(201)
    expect((await writes['route 1 (login)']!()).statusCode).toBe(200)
    expect(Date.now() - back).toBeLessThan(5_000)
  })
})

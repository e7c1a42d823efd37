import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { databaseUrl } from '../helpers/database-url.js'
import { resetDatabase, testDatabase, workerSchema } from '../helpers/database.js'
import { unavailableCount } from '../helpers/metrics.js'
import { CuttableProxy } from '../helpers/tcp-proxy.js'
import { bearer, buildTestApp, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import type { FastifyInstance } from 'fastify'

const serverUrl = process.env.TEST_DATABASE_URL

// The embedded database lives in the process and cannot go away on its own: this needs a server.
describe.skipIf(!serverUrl)('when the database goes away under traffic', () => {
  let proxy: CuttableProxy
  let handle: DatabaseHandle
  let app: FastifyInstance

  beforeAll(async () => {
    await testDatabase()
    await resetDatabase()
    const target = new URL(serverUrl ?? '')
    proxy = new CuttableProxy(target.hostname, Number(target.port || 5432))
    await proxy.start()
    handle = createPostgresDatabase({
      connectionString: databaseUrl(serverUrl ?? '', { port: proxy.port }),
      poolSize: 4,
      schema: workerSchema(),
    })
    app = await buildTestApp({}, { database: handle })
  })

  afterAll(async () => {
    await app?.close()
    await handle?.db.destroy()
    await proxy?.cut()
  })

  it('answers 503 fast without crashing, and recovers by itself when the database returns', async () => {
    const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    const read = () => app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })
    expect((await read()).statusCode).toBe(200)

    // Traffic in flight while the connection is cut.
    const during = Array.from({ length: 20 }, () => read())
    await proxy.cut()
    const statuses = (await Promise.all(during)).map((response) => response.statusCode)
    expect(statuses.every((status) => status === 200 || status === 503)).toBe(true)

    const started = Date.now()
    const down = await Promise.all(Array.from({ length: 10 }, () => read()))
    expect(Date.now() - started).toBeLessThan(3_000)
    for (const response of down) {
      expect(response.statusCode).toBe(503)
      expect(response.headers['retry-after']).toBe('5')
      expect(response.json().code).toBe('service_unavailable')
    }
    // Each 503 counted once, under its cause (the DatabaseUnavailable alert reads it).
    const unavailable = statuses.filter((status) => status === 503).length + down.length
    expect(await unavailableCount(app, 'database')).toBe(unavailable)
    expect(await unavailableCount(app, 'hash_queue_full')).toBe(0)
    expect((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(503)
    expect((await app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200)

    await proxy.restore()
    expect((await read()).statusCode).toBe(200)
    expect((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)
    const login = await app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email: 'bob@beta.example', password: DEMO_PASSWORD } })
    expect(login.statusCode).toBe(200)
  })
})

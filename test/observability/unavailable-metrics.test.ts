import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { MemoryCounterStore } from '../../src/auth/login-throttle.js'
import { createPostgresDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { bearer, buildTestApp, DEMO_PASSWORD, obtainTokens, testConfig } from '../helpers/app.js'
import { databaseUrl } from '../helpers/database-url.js'
import { resetDatabase, testDatabase, workerSchema } from '../helpers/database.js'
import { recordConformance } from '../helpers/openapi-conformance.js'
import { CuttableProxy } from '../helpers/tcp-proxy.js'

// Issue 29: the DatabaseUnavailable alert reads 503s by cause (service_unavailable_responses_total),
// apart from the other 5xx; each 503 the error handler answers is counted once, under its cause.

async function unavailable(app: FastifyInstance, cause: string): Promise<number | undefined> {
  const series = `service_unavailable_responses_total{cause="${cause}"} `
  const line = (await app.metrics.registry.metrics()).split('\n').find((candidate) => candidate.startsWith(series))
  return line === undefined ? undefined : Number(line.slice(series.length))
}

describe('503s counted by cause (issue 29)', () => {
  it('counts each login shed by a full hashing queue, and nothing under the other causes', async () => {
    await resetDatabase()
    const app = await buildTestApp({ PASSWORD_HASH_QUEUE_PER_THREAD: '1', LOGIN_FAILURES_PER_ADDRESS: '1000' })
    try {
      expect(await unavailable(app, 'hash_queue_full')).toBe(0)
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          app.inject({
            method: 'POST',
            url: '/api/auth/v1/token',
            payload: { email: `flood-${index}@nowhere.example`, password: `guess ${index}` },
            remoteAddress: `203.0.113.${index + 1}`,
          }),
        ),
      )
      const shed = responses.filter((response) => response.statusCode === 503).length
      expect(shed).toBeGreaterThan(0)
      expect(await unavailable(app, 'hash_queue_full')).toBe(shed)
      expect(await unavailable(app, 'database')).toBe(0)
      expect(await unavailable(app, 'handler_timeout')).toBe(0)
    } finally {
      await app.close()
    }
  })
})

const serverUrl = process.env.TEST_DATABASE_URL

// The embedded database lives in the process and cannot go away: this needs a server.
describe.skipIf(!serverUrl)('503s counted by cause when the database goes away (issue 29)', () => {
  let proxy: CuttableProxy
  let handle: DatabaseHandle
  let app: FastifyInstance

  beforeAll(async () => {
    await testDatabase()
    await resetDatabase()
    const target = new URL(serverUrl ?? '')
    proxy = new CuttableProxy(target.hostname, Number(target.port || 5432))
    await proxy.start()
    handle = createPostgresDatabase({ connectionString: databaseUrl(serverUrl ?? '', { port: proxy.port }), poolSize: 4, schema: workerSchema() })
    app = await buildApp(testConfig(), { database: handle, counterStore: new MemoryCounterStore() })
    recordConformance(app)
  })

  afterAll(async () => {
    await app?.close()
    await handle?.db.destroy()
    await proxy?.cut()
  })

  it('counts every 503 under database', async () => {
    const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    const read = () => app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })
    expect((await read()).statusCode).toBe(200)
    await proxy.cut()
    const down = await Promise.all(Array.from({ length: 20 }, () => read()))
    expect(down.every((response) => response.statusCode === 503)).toBe(true)
    expect(await unavailable(app, 'database')).toBe(20)
    expect(await unavailable(app, 'hash_queue_full')).toBe(0)
    await proxy.restore()
    expect((await read()).statusCode).toBe(200)
    expect(await unavailable(app, 'database')).toBe(20)
  })
})

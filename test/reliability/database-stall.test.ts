import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { databaseUrl } from '../helpers/database-url.js'
import { resetDatabase, testDatabase, workerSchema } from '../helpers/database.js'
import { CuttableProxy } from '../helpers/tcp-proxy.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'

const serverUrl = process.env.TEST_DATABASE_URL

interface Stack {
  proxy: CuttableProxy
  handle: DatabaseHandle
  app: FastifyInstance
}

// A database that hangs (a stalled network, a paused pooler) rather than refusing: nothing errors
// by itself, only the service's own timers can end the wait. The embedded database cannot stall.
describe.skipIf(!serverUrl)('when the database stalls under traffic', () => {
  let stack: Stack | undefined

  beforeAll(async () => {
    await testDatabase()
    await resetDatabase()
  })

  afterEach(async () => {
    stack?.proxy.resume()
    await stack?.app.close()
    await stack?.handle.db.destroy()
    await stack?.proxy.cut()
    stack = undefined
  })

  async function start(options: { statementTimeoutMs: number; env?: Record<string, string> }): Promise<Stack> {
    const target = new URL(serverUrl ?? '')
    const proxy = new CuttableProxy(target.hostname, Number(target.port || 5432))
    await proxy.start()
    const handle = createPostgresDatabase({
      connectionString: databaseUrl(serverUrl ?? '', { port: proxy.port }),
      poolSize: 4,
      schema: workerSchema(),
      preparedStatements: true,
      connectTimeoutMs: 1_000,
      statementTimeoutMs: options.statementTimeoutMs,
    })
    const app = await buildTestApp(options.env, { database: handle })
    stack = { proxy, handle, app }
    return stack
  }

  it('answers 503 with Retry-After within seconds, keeps liveness, and recovers when the database answers again', async () => {
    const { app, proxy } = await start({ statementTimeoutMs: 1_500 })
    const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    const read = () => app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })
    expect((await read()).statusCode).toBe(200)

    proxy.stall()
    let started = Date.now()
    const ready = await app.inject({ method: 'GET', url: '/health/ready' })
    expect(ready.statusCode).toBe(503)
    expect(Date.now() - started).toBeLessThan(1_500) // the probe's own bound is 1 s
    expect(ready.headers['retry-after']).toBe('5')

    // More requests than connections: some wait for one (acquisition bound), some hang on one (statement bound).
    started = Date.now()
    const down = await Promise.all(Array.from({ length: 10 }, () => read()))
    expect(Date.now() - started).toBeLessThan(5_000)
    for (const response of down) {
      expect(response.statusCode).toBe(503)
      expect(response.headers['retry-after']).toBe('5')
      expect(response.headers['content-type']).toContain('application/problem+json')
      expect(response.json().code).toBe('service_unavailable')
    }
    expect((await app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200)

    proxy.resume()
    // Connections that timed out were destroyed; new ones serve at once.
    expect((await read()).statusCode).toBe(200)
    expect((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)
    const login = await app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email: 'bob@beta.example', password: DEMO_PASSWORD } })
    expect(login.statusCode).toBe(200)
  })

  it('bounds a whole request by HANDLER_TIMEOUT, whatever the statements’ bound', async () => {
    const { app, proxy } = await start({ statementTimeoutMs: 30_000, env: { HANDLER_TIMEOUT: '1s' } })
    const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    proxy.stall()
    const started = Date.now()
    const response = await app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })
    expect(Date.now() - started).toBeLessThan(2_500)
    expect(response.statusCode).toBe(503)
    expect(response.headers['retry-after']).toBe('5')
    expect(response.json()).toMatchObject({ code: 'service_unavailable', status: 503 })
    // Over a real socket too: a GET has no body to wait for, so the service is the one late (503, not 408).
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const overHttp = await fetch(`http://127.0.0.1:${port}/api/company/v1/get-user-companies`, { headers: bearer(access) })
    expect(overHttp.status).toBe(503)
    expect(overHttp.headers.get('retry-after')).toBe('5')
  })

  it('bounds a POST by HANDLER_TIMEOUT too, once its body is read (routes 1, 3 and 11, over real sockets)', async () => {
    const { app, proxy } = await start({ statementTimeoutMs: 30_000, env: { HANDLER_TIMEOUT: '1s' } })
    const { access, refresh } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const post = (path: string, body: object, headers: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      })
    proxy.stall()
    const started = Date.now()
    // Fastify's own handlerTimeout stopped its timer when the body had been read: these waited for the statement bound.
    const answers = await Promise.all([
      post('/api/auth/v1/token', { email: 'bob@beta.example', password: DEMO_PASSWORD }),
      post('/api/auth/v1/token/refresh', { refresh }),
      post(`/api/company/v1/${DEMO.roles.acmeSeller}/customers/${randomUUID()}`, { name: 'Zeta Comércio', tax_id: '12345678909' }, bearer(access)),
    ])
    expect(Date.now() - started).toBeLessThan(2_500)
    for (const answer of answers) {
      expect([answer.status, answer.headers.get('retry-after'), answer.headers.get('content-type')]).toEqual([
        503,
        '5',
        'application/problem+json; charset=utf-8',
      ])
      expect(await answer.json()).toMatchObject({ status: 503, code: 'service_unavailable' })
    }
  })
})

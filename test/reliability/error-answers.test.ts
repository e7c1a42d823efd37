import type { AddressInfo } from 'node:net'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { jsonResponse, Problems, routeResponses } from '../../schemas/responses.js'
import { problem } from '../../src/lib/problem.js'
import { buildTestApp, DEMO_PASSWORD, problemOf } from '../helpers/app.js'
import { resetDatabase, testDatabase } from '../helpers/database.js'
import { unavailableCount } from '../helpers/metrics.js'

/*
 * Every error answer is the contract's problem document (§1), whatever fails and in whatever order:
 * a route and then a side write of its onSend hook, the serializer, HANDLER_TIMEOUT. Fastify would
 * otherwise answer some of these itself, as `{"statusCode":503,"code":"57014",...,"message":"canceling
 * statement due to statement timeout"}`.
 */

/** An error as pg makes them: PostgreSQL's SQLSTATE and message. */
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'ERROR' })
const statementTimeout = () => pgError('57014', 'canceling statement due to statement timeout')
const terminated = () => pgError('57P01', 'terminating connection due to administrator command')

/** Anything of the database or the framework that must never reach a client. */
const INTERNALS = /57014|57P01|25006|canceling statement|terminating connection|read-only transaction|statusCode|FST_ERR|is required/

const Named = Type.Object({ name: Type.String() })
const documented = { 200: jsonResponse('A name', Named, {}) }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const signalSeen: Array<{ abortedAtStart: boolean; reason: string | undefined }> = []

/** Throwaway public routes, each failing its own way. */
const failingRoutes: FastifyPluginAsync = async (app) => {
  const route = (
    url: string,
    handler: () => Promise<unknown>,
    onSend?: (request: FastifyRequest, reply: FastifyReply, payload: unknown) => Promise<unknown>,
  ) =>
    app.route({
      method: ['GET', 'POST'],
      url,
      config: { public: true },
      schema: { response: routeResponses(documented, [Problems.notFound]) },
      handler,
      ...(onSend ? { onSend } : {}),
    })
  // The route fails on the database, then so does its side write while the 503 is on its way.
  route(
    '/test/fails-twice',
    async () => {
      throw statementTimeout()
    },
    async () => {
      throw terminated()
    },
  )
  // The route succeeds; its side write fails, on the answer and again on the 503 that replaces it.
  route(
    '/test/side-write-fails',
    async () => ({ name: 'done' }),
    async () => {
      throw statementTimeout()
    },
  )
  // A 404, then a bug in a hook on its way out: 500.
  route(
    '/test/hook-bug',
    async () => {
      throw problem(404, 'not_found', 'Not found.')
    },
    async () => {
      throw new TypeError("Cannot read properties of undefined (reading 'id')")
    },
  )
  // The body breaks the route's schema: the serializer fails.
  route('/test/bad-body', async () => ({}))
  // The serializer fails, and then on the 500 too (the route's 500 schema wants what no problem has).
  app.get('/test/bad-body-twice', {
    config: { public: true },
    schema: { response: { 200: Named, 500: Type.Object({ never: Type.String() }) } },
    handler: async () => ({}),
  })
  // What request.signal told a handler: not aborted once its body was read, aborted at HANDLER_TIMEOUT.
  app.post('/test/watches-signal', {
    config: { public: true },
    schema: { response: routeResponses(documented, []) },
    handler: async (request) => {
      const abortedAtStart = request.signal.aborted
      await sleep(3_000)
      signalSeen.push({ abortedAtStart, reason: (request.signal.reason as { code?: string } | undefined)?.code })
      return { name: 'late' }
    },
  })
  // Held past HANDLER_TIMEOUT: in the handler, or while its error answer waits on a side write.
  route('/test/hangs', async () => sleep(3_000).then(() => ({ name: 'late' })))
  route(
    '/test/hangs-in-hook',
    async () => {
      throw statementTimeout()
    },
    async (_request, _reply, payload) => sleep(3_000).then(() => payload),
  )
}

function expectProblem(response: LightMyRequestResponse, status: number, code: string): void {
  problemOf(response, status, code)
  expect(Object.keys(response.json()).sort()).toEqual(['code', 'detail', 'status', 'title', 'type'])
  expect(response.body).not.toMatch(INTERNALS)
}

describe('error answers when more than one thing fails (issue 32, item 3)', () => {
  let app: FastifyInstance
  let port: number
  const lines: Record<string, unknown>[] = []

  beforeAll(async () => {
    const logDestination = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }
    app = await buildTestApp({ HANDLER_TIMEOUT: '500ms', LOG_LEVEL: 'info' }, { extraRoutes: failingRoutes, logDestination })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as AddressInfo).port
  })
  afterAll(async () => {
    await app.close()
  })

  it('answers a route and then its side write failing on the database with one 503 problem, logged with the request id', async () => {
    for (const method of ['GET', 'POST'] as const) {
      const response = await app.inject({ method, url: '/test/fails-twice', ...(method === 'POST' ? { payload: {} } : {}) })
      expectProblem(response, 503, 'service_unavailable')
      expect(response.headers['retry-after']).toBe('5')
      expect(response.headers['x-request-id']).toBeDefined()
      const logged = lines.filter((line) => line.request_id === response.headers['x-request-id'] && line.level === 40)
      expect(logged.map((line) => (line.err as { code?: string }).code)).toEqual(['57014', '57P01'])
    }
  })

  it('answers a success whose side write fails, twice, with a 503 problem, counted once', async () => {
    const before = await unavailableCount(app, 'database')
    const response = await app.inject({ method: 'GET', url: '/test/side-write-fails' })
    expectProblem(response, 503, 'service_unavailable')
    expect(response.headers['retry-after']).toBe('5')
    expect(await unavailableCount(app, 'database')).toBe((before ?? 0) + 1)
  })

  it('answers a hook failing on an error answer 500 server_error, not the framework’s JSON', async () => {
    expectProblem(await app.inject({ method: 'GET', url: '/test/hook-bug' }), 500, 'server_error')
  })

  it('answers a body the serializer refuses 500 server_error, and the same when the 500 is refused too', async () => {
    expectProblem(await app.inject({ method: 'GET', url: '/test/bad-body' }), 500, 'server_error')
    expectProblem(await app.inject({ method: 'GET', url: '/test/bad-body-twice' }), 500, 'server_error')
  })

  it('answers a request held past HANDLER_TIMEOUT 503 in time, a POST with a body included, and one whose error answer waits on a hook', async () => {
    const requests = [
      { method: 'GET', url: '/test/hangs' },
      { method: 'POST', url: '/test/hangs', body: JSON.stringify({ name: 'x' }) },
      { method: 'POST', url: '/test/hangs-in-hook', body: JSON.stringify({ name: 'x' }) },
    ]
    const counted = async () => ((await unavailableCount(app, 'database')) ?? 0) + ((await unavailableCount(app, 'handler_timeout')) ?? 0)
    const before = await counted()
    for (const { method, url, body } of requests) {
      const started = Date.now()
      const response = await fetch(`http://127.0.0.1:${port}${url}`, {
        method,
        ...(body ? { body, headers: { 'content-type': 'application/json' } } : {}),
      })
      expect(Date.now() - started).toBeLessThan(2_000)
      expect([response.status, response.headers.get('content-type'), response.headers.get('retry-after')]).toEqual([
        503,
        'application/problem+json; charset=utf-8',
        '5',
      ])
      const text = await response.text()
      expect(JSON.parse(text)).toMatchObject({ status: 503, code: 'service_unavailable', type: 'urn:problem:service_unavailable' })
      expect(text).not.toMatch(INTERNALS)
    }
    expect(await counted()).toBe(before + requests.length)
  })

  it('aborts request.signal at HANDLER_TIMEOUT with FST_ERR_HANDLER_TIMEOUT, not when a body has been read', async () => {
    // Over a socket: Node ends a real request's stream ('close') once its body has been read.
    const response = await fetch(`http://127.0.0.1:${port}/test/watches-signal`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x' }),
    })
    expect([response.status, ((await response.json()) as { code?: string }).code]).toEqual([503, 'service_unavailable'])
    for (const end = Date.now() + 5_000; signalSeen.length === 0 && Date.now() < end;) await sleep(50)
    expect(signalSeen).toEqual([{ abortedAtStart: false, reason: 'FST_ERR_HANDLER_TIMEOUT' }])
  })
})

// The embedded database is one session: a read-only default there makes every write refused, as a
// standby would. PostgreSQL's case, with its pool, is read-only-database.test.ts.
describe.skipIf(process.env.TEST_DATABASE_URL)('a read-only embedded database', () => {
  let app: FastifyInstance
  beforeAll(async () => {
    await resetDatabase()
    app = await buildTestApp()
  })
  afterAll(async () => {
    await sql`SET default_transaction_read_only = off`.execute((await testDatabase()).db)
    await app.close()
  })

  it('answers writes 503 service_unavailable with Retry-After, and readiness 503, until it takes writes again', async () => {
    const { db } = await testDatabase()
    const login = () => app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email: 'alice@acme.example', password: DEMO_PASSWORD } })
    await sql`SET default_transaction_read_only = on`.execute(db)
    const refused = await login()
    expectProblem(refused, 503, 'service_unavailable')
    expect(refused.headers['retry-after']).toBe('5')
    expect(await unavailableCount(app, 'read_only')).toBe(1)
    const ready = await app.inject({ method: 'GET', url: '/health/ready' })
    expect([ready.statusCode, ready.json().detail]).toEqual([503, 'The database refuses writes (read-only, or in recovery).'])

    await sql`SET default_transaction_read_only = off`.execute(db)
    expect((await login()).statusCode).toBe(200)
    expect((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)
  })
})

import { connect } from 'node:net'
import lightInject from 'light-my-request'
import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createPostgresDatabase } from '../../src/db/database.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'

const ctx = useTestApp()

describe('conventions every route shares', () => {
  it('answers an unknown route with a 404 problem', async () => {
    problemOf(await ctx.app.inject({ method: 'GET', url: '/api/nothing-here' }), 404, 'not_found')
  })

  it('keeps a sane X-Request-Id from the gateway (TRUST_PROXY) and makes one otherwise', async () => {
    const lines: Record<string, unknown>[] = []
    const logDestination = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }
    const gateway = await buildTestApp({ TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'info' }, { logDestination })
    try {
      const kept = await gateway.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'gw-123.abc' } })
      expect(kept.headers['x-request-id']).toBe('gw-123.abc')
      const made = await gateway.inject({ method: 'GET', url: '/health/live' })
      expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
      const hostile = await gateway.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'bad id\n{"level":60}' } })
      expect(hostile.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
      const onError = await gateway.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: { 'x-request-id': 'gw-401' } })
      expect(onError.statusCode).toBe(401)
      expect(onError.headers['x-request-id']).toBe('gw-401')
      // Anyone else, TRUST_PROXY or not, gets an id of the service's: a client cannot write into another request's trail.
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
      const headers = { 'x-request-id': 'gw-123.abc', traceparent }
      for (const response of [
        await gateway.inject({ method: 'GET', url: '/api/nothing-here', headers, remoteAddress: '203.0.113.9' }),
        await ctx.app.inject({ method: 'GET', url: '/api/nothing-here', headers }),
      ]) {
        expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
      }
      const line = lines.find((entry) => entry.msg === 'request completed' && entry.client_request_id === 'gw-123.abc')
      expect(line).toMatchObject({ client_trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', req: { remoteAddress: '203.0.113.9' } })
      expect(line!.request_id).not.toBe('gw-123.abc')
      expect(line!.trace_id).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736')
    } finally {
      await gateway.close()
    }
  })

  it('answers 400 invalid, not 500, to a urn:uuid: id (ajv-formats takes it, PostgreSQL does not)', async () => {
    const tokens = await obtainTokens(ctx.app, 'bob@beta.example', DEMO_PASSWORD)
    const urn = `urn:uuid:${DEMO.roles.betaBuyer}`
    const response = await ctx.app.inject({
      method: 'GET',
      url: `/api/v1/marketplace/${urn}/title/${DEMO.titles.t1}/documents`,
      headers: bearer(tokens.access),
    })
    expect(problemOf(response, 400, 'invalid').errors).toEqual({ company_role_id: ['Must be a valid uuid.'] })
  })

  it('answers a malformed or over-long path with a 400 problem that does not echo the path', async () => {
    for (const url of ['/webhook/esign/secret-in-path%ZZ/', '/api/company/v1/get-user-companies%', `/webhook/esign/${'s'.repeat(1025)}/`]) {
      const response = await ctx.app.inject({ method: 'POST', url })
      expect(problemOf(response, 400, 'invalid').errors).toHaveProperty('path')
      expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
      expect(response.body).not.toMatch(/secret-in-path|ssss/)
    }
  })

  it('takes the client address from X-Forwarded-For only when TRUST_PROXY says so', async () => {
    const trusting = await buildTestApp({ TRUST_PROXY: 'true', LOGIN_FAILURES_PER_CLIENT: '1' })
    try {
      const attempt = (password: string, forwardedFor: string) =>
        trusting.inject({
          method: 'POST',
          url: '/api/auth/v1/token',
          payload: { email: 'alice@acme.example', password },
          headers: { 'x-forwarded-for': forwardedFor },
        })
      await attempt('wrong', '198.51.100.1')
      problemOf(await attempt(DEMO_PASSWORD, '198.51.100.1'), 429, 'throttled')
      expect((await attempt(DEMO_PASSWORD, '198.51.100.2')).statusCode).toBe(200)
    } finally {
      await trusting.close()
    }
  })
})

describe('the Host header (issue 42, item 12)', () => {
  /** The raw answer to `head` (a request line and its fields) and `body`, sent on a socket of its own. */
  async function rawAnswer(head: string, body: string): Promise<string> {
    const app = await buildTestApp()
    try {
      await app.listen({ port: 0, host: '127.0.0.1' })
      const address = app.server.address()
      const socket = connect(typeof address === 'object' && address ? address.port : 0, '127.0.0.1')
      const received: Buffer[] = []
      socket.on('data', (chunk: Buffer) => received.push(chunk))
      const closed = new Promise((resolve) => socket.on('close', resolve))
      socket.write(`${head}Connection: close\r\n\r\n${body}`)
      await closed
      return Buffer.concat(received).toString()
    } finally {
      await app.close()
    }
  }

  it('answers two Host fields with a 400 problem (RFC 9112 §3.2), one with the route', async () => {
    const login = JSON.stringify({ email: 'alice@acme.example', password: DEMO_PASSWORD })
    const request = (hosts: string) =>
      `POST /api/auth/v1/token HTTP/1.1\r\n${hosts}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(login)}\r\n`
    for (const hosts of ['Host: a.example\r\nHost: b.example\r\n', 'Host: a.example\r\nhost: a.example\r\n']) {
      const answer = await rawAnswer(request(hosts), login)
      expect(answer).toMatch(/^HTTP\/1\.1 400 /)
      expect(answer).toMatch(/content-type: application\/problem\+json/i)
      expect(answer).toContain('"code":"invalid"')
      expect(answer).toContain('RFC 9112')
    }
    expect(await rawAnswer(request('Host: a.example\r\n'), login)).toMatch(/^HTTP\/1\.1 200 /)
  })
})

describe('health, docs and failures', () => {
  it('reports liveness and readiness', async () => {
    expect((await ctx.app.inject({ method: 'GET', url: '/health/live' })).json()).toEqual({ status: 'ok' })
    expect((await ctx.app.inject({ method: 'GET', url: '/health/ready' })).json()).toEqual({ status: 'ok' })
  })

  it('serves the OpenAPI document with every route, public ones without bearer security', async () => {
    const ui = await ctx.app.inject({ method: 'GET', url: '/docs' })
    expect([200, 302]).toContain(ui.statusCode)
    const response = await ctx.app.inject({ method: 'GET', url: '/docs/json' })
    expect(response.statusCode).toBe(200)
    const document = response.json()
    expect(document.openapi).toBe('3.1.0')
    expect(document.paths['/api/auth/v1/token'].post.security).toEqual([])
    expect(document.paths['/api/auth/v1/token'].post.responses).toHaveProperty('429')
    expect(document.paths['/api/company/v1/get-user-companies'].get.security).toEqual([{ bearerAuth: [] }])
    expect(document.components.schemas).toHaveProperty('Problem')
    // Optional bodies are documented as such, and the marker does not leak into the document.
    const confirmation = document.paths['/api/registration/v1/confirm-migration-account/{uidb64}/{token}'].post
    expect(confirmation.requestBody.required).toBe(false)
    expect(confirmation).not.toHaveProperty('x-optional-body')
    expect(document.paths['/api/auth/v1/token'].post.requestBody.required).toBe(true)
  })

  it('answers 503 with Retry-After when the database cannot be reached, and says not ready', async () => {
    const app = await buildTestApp()
    const tokens = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    await app.close()
    const unreachable = createPostgresDatabase({ connectionString: 'postgres://postgres@127.0.0.1:1/none', poolSize: 1 })
    const down = await buildTestApp({}, { database: unreachable })
    try {
      const response = await down.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(tokens.access) })
      const body = problemOf(response, 503, 'service_unavailable')
      expect(response.headers['retry-after']).toBe('5')
      expect(JSON.stringify(body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/)
      problemOf(await down.inject({ method: 'GET', url: '/health/ready' }), 503, 'service_unavailable')
      expect((await down.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200)
      const login = await down.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email: 'alice@acme.example', password: 'x' } })
      problemOf(login, 503, 'service_unavailable')
    } finally {
      await down.close()
      await unreachable.db.destroy()
    }
  })
})

describe('logs', () => {
  it('are JSON lines with the request id, and carry no credentials', async () => {
    const lines: string[] = []
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean))
        done()
      },
    })
    const app = await buildTestApp({ LOG_LEVEL: 'debug', TRUST_PROXY: '127.0.0.1' }, { logDestination: destination })
    try {
      const tokens = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      await app.inject({
        method: 'GET',
        url: '/api/company/v1/get-user-companies',
        headers: { ...bearer(tokens.access), 'x-request-id': 'trace-me' },
      })
      await app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: tokens.refresh } })
      await app.inject({ method: 'POST', url: '/webhook/esign/super-secret-value/', payload: {} })
    } finally {
      await app.close()
    }
    const all = lines.join('\n')
    expect(lines.length).toBeGreaterThan(3)
    expect(lines.some((line) => JSON.parse(line).request_id === 'trace-me')).toBe(true)
    for (const secret of [DEMO_PASSWORD, 'super-secret-value', 'Bearer ']) expect(all).not.toContain(secret)
    expect(all).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/)
  })
})

describe('shutdown', () => {
  it('finishes a request in flight on a keep-alive connection, then closes that connection', async () => {
    const app = await buildTestApp()
    await app.listen({ port: 0, host: '127.0.0.1' })
    const address = app.server.address()
    const socket = connect(typeof address === 'object' && address ? address.port : 0, '127.0.0.1')
    const received: Buffer[] = []
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    // A reset as the server closes is no unhandled error of the run: 'close' follows, and the asserts below judge.
    socket.on('error', () => undefined)
    const socketClosed = new Promise((resolve) => socket.on('close', resolve))
    // The HTTP server has parsed the request and handed it to Fastify: the login is being served.
    const requestReceived = new Promise((resolve) => app.server.once('request', resolve))
    const login = JSON.stringify({ email: 'alice@acme.example', password: DEMO_PASSWORD })
    socket.write(
      `POST /api/auth/v1/token HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(login)}\r\n\r\n${login}`,
    )
    await requestReceived
    const started = Date.now()
    await app.close()
    await socketClosed
    // Without `Connection: close`, close() would wait for the client's keep-alive to lapse.
    expect(Date.now() - started).toBeLessThan(5_000)
    const response = Buffer.concat(received).toString()
    expect(response).toMatch(/^HTTP\/1\.1 200/)
    expect(response).toMatch(/connection: close/i)
    expect(response).toContain('"access"')
  })

  it('answers a request that reaches the router while draining with a 503 problem and Retry-After', async () => {
    const app = await buildTestApp()
    await app.close()
    // Fastify's inject refuses a closed app; light-my-request drives its router directly, as a
    // request arriving on a still-open connection would reach it.
    const late = await lightInject(app.routing, { method: 'GET', url: '/health/live' })
    expect(late.statusCode).toBe(503)
    expect(late.headers['retry-after']).toBe('5')
    expect(late.headers['content-type']).toBe('application/problem+json; charset=utf-8')
    expect(late.json()).toMatchObject({ status: 503, code: 'service_unavailable' })
  })
})

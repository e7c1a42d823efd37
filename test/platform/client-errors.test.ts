import { connect, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp } from '../helpers/app.js'
import { TEST_SECRETS } from '../helpers/secrets.js'

let app: FastifyInstance
let port: number

beforeAll(async () => {
  app = await buildTestApp({ REQUEST_TIMEOUT: '1s' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  port = (app.server.address() as { port: number }).port
})
afterAll(async () => {
  await app.close()
})

interface Exchange {
  answer: string
  closedAfterMs: number
}

/** Writes `chunks` to a raw socket (each after `gapMs`) and collects what comes back until the server closes. */
function exchange(chunks: string[], gapMs = 0, giveUpMs = 10_000, target = port): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const socket: Socket = connect(target, '127.0.0.1')
    let answer = ''
    let timer: NodeJS.Timeout | undefined
    const giveUp = setTimeout(() => {
      clearTimeout(timer)
      socket.destroy()
      reject(new Error(`the server still held the connection after ${giveUpMs} ms; got: ${answer}`))
    }, giveUpMs)
    socket.on('data', (data) => (answer += String(data)))
    socket.on('error', () => undefined)
    socket.on('close', () => {
      clearTimeout(giveUp)
      clearTimeout(timer)
      resolve({ answer, closedAfterMs: Date.now() - started })
    })
    const send = (index: number) => {
      if (index >= chunks.length || socket.destroyed) return
      socket.write(chunks[index] ?? '')
      timer = setTimeout(() => send(index + 1), gapMs)
    }
    socket.on('connect', () => send(0))
  })
}

function problemOfRaw(answer: string): { status: number; contentType: string | undefined; body: Record<string, unknown> } {
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  const status = Number(head.split(' ')[1])
  const contentType = /content-type: ([^\r\n]+)/i.exec(head)?.[1]
  return { status, contentType, body: JSON.parse(body) as Record<string, unknown> }
}

describe('requests Node refuses before routing, and slow bodies (issue 15, item 8 and Info)', () => {
  it('ends a body sent one byte at a time with 408 in the problem shape, within the request timeout', async () => {
    const head = 'POST /api/auth/v1/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n'
    const trickle = Array.from({ length: 40 }, () => ' ')
    const { answer, closedAfterMs } = await exchange([head, ...trickle], 400)
    expect(problemOfRaw(answer)).toMatchObject({
      status: 408,
      contentType: 'application/problem+json',
      body: { status: 408, code: 'request_timeout' },
    })
    expect(closedAfterMs).toBeLessThan(5_000)
  })

  it('ends headers sent too slowly the same way', async () => {
    const { answer } = await exchange(['GET /health/live HTTP/1.1\r\n', 'Host: x\r\n', 'X-A: 1\r\n', 'X-B: 1\r\n', 'X-C: 1\r\n', 'X-D: 1\r\n'], 600)
    expect(problemOfRaw(answer)).toMatchObject({ status: 408, body: { code: 'request_timeout' } })
  })

  it('answers oversized headers 431 in the problem shape', async () => {
    const { answer } = await exchange([`GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`])
    expect(problemOfRaw(answer)).toMatchObject({
      status: 431,
      contentType: 'application/problem+json',
      body: { type: 'urn:problem:header_too_large', title: 'Request Header Fields Too Large', status: 431, code: 'header_too_large' },
    })
  })

  it('answers Content-Length with Transfer-Encoding, or two Content-Lengths, 400 in the problem shape', async () => {
    for (const smuggled of [
      'POST /api/auth/v1/token HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'POST /api/auth/v1/token HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
    ]) {
      const { answer } = await exchange([smuggled])
      expect(problemOfRaw(answer)).toMatchObject({ status: 400, contentType: 'application/problem+json', body: { code: 'bad_request' } })
    }
  })

  it('answers a request line without an HTTP version (HTTP/0.9) 400 in the problem shape, and closes (issue 26, item 8)', async () => {
    for (const request of ['GET /health/live\r\n\r\n', 'GET /health/live\r\nHost: x\r\n\r\n']) {
      const { answer } = await exchange([request], 0, 5_000)
      expect(problemOfRaw(answer)).toMatchObject({ status: 400, contentType: 'application/problem+json', body: { code: 'bad_request' } })
    }
    // HTTP/1.0, and the absolute form RFC 9112 requires a server to take, are served as before.
    for (const request of [
      'GET /health/live HTTP/1.0\r\n\r\n',
      'GET http://any.example/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    ]) {
      expect((await exchange([request], 0, 5_000)).answer).toMatch(/^HTTP\/1\.1 200 /)
    }
  })

  it('keeps idle keep-alive connections longer than a gateway does, and says so in the header', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/health/live`)
    expect(response.headers.get('keep-alive')).toBe('timeout=65')
    expect(app.server.requestTimeout).toBe(1000)
  })
})

describe('a body still arriving when HANDLER_TIMEOUT runs out (issue 26, item 8)', () => {
  let slowApp: FastifyInstance
  let slowPort: number
  beforeAll(async () => {
    // The handler timeout first, as in the defaults (10 s against 30 s).
    slowApp = await buildTestApp({ REQUEST_TIMEOUT: '30s', HANDLER_TIMEOUT: '1s' })
    await slowApp.listen({ port: 0, host: '127.0.0.1' })
    slowPort = (slowApp.server.address() as { port: number }).port
  })
  afterAll(async () => {
    await slowApp.close()
  })

  it('is answered 408 request_timeout (the client is late), not 503, and the connection closed', async () => {
    const routes = ['/api/auth/v1/token', `/webhook/esign/${TEST_SECRETS.ESIGN_WEBHOOK_SECRETS}/`]
    const answers = await Promise.all(
      routes.map((route) => {
        const head = `POST ${route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"email":`
        return exchange([head, ...Array.from({ length: 20 }, () => ' ')], 300, 10_000, slowPort)
      }),
    )
    for (const { answer, closedAfterMs } of answers) {
      expect(problemOfRaw(answer)).toMatchObject({ status: 408, body: { status: 408, code: 'request_timeout' } })
      expect(problemOfRaw(answer).contentType).toMatch(/^application\/problem\+json/)
      expect(answer).toMatch(/\r\nconnection: close\r\n/i)
      expect(closedAfterMs).toBeLessThan(5_000)
    }
  })
})

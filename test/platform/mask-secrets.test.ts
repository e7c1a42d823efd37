import { Writable } from 'node:stream'
import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { loggerOptions, maskSecrets } from '../../src/logging.js'

const MASK = '[REDACTED]'

/** A pino logger with the service's options (Fastify passes `stream` on as pino's destination), and its lines, parsed. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  const { stream, ...options } = loggerOptions('info', destination)
  return { log: pino(options, stream), lines }
}

describe('maskSecrets: the fields of a log line', () => {
  it('masks secret-named fields at the top level and one level down, in any case', () => {
    const fields = {
      password: 'hunter2',
      Authorization: 'Bearer abc',
      body: { email: 'alice@acme.example', password: 'hunter2', refresh: 'r', access: 'a' },
      headers: { 'content-type': 'application/json', cookie: 'sid=1', 'Content-HMAC': 'sha256=x', 'set-cookie': 'sid=2' },
      result: { token: 't', duplicate: false },
      responseTime: 1.5,
    }
    expect(maskSecrets(fields)).toEqual({
      password: MASK,
      Authorization: MASK,
      body: { email: 'alice@acme.example', password: MASK, refresh: MASK, access: MASK },
      headers: { 'content-type': 'application/json', cookie: MASK, 'Content-HMAC': MASK, 'set-cookie': MASK },
      result: { token: MASK, duplicate: false },
      responseTime: 1.5,
    })
  })

  it("leaves the caller's objects as they were", () => {
    const body = { password: 'hunter2' }
    const fields = { body }
    maskSecrets(fields)
    expect(fields.body).toBe(body)
    expect(body.password).toBe('hunter2')
  })

  it('returns a line without secrets as it is, without copying it', () => {
    const fields = { result: { duplicate: true, envelope: 'demo-envelope-0001' }, responseTime: 2, items: [{ password: 'in a list' }] }
    expect(maskSecrets(fields)).toBe(fields)
    expect(maskSecrets(fields).result).toBe(fields.result)
  })

  it('keeps an error an error: its type, message and stack, with its secret properties masked', () => {
    class UpstreamError extends Error {
      override name = 'UpstreamError'
      constructor(readonly token: string) {
        super('the provider refused the call')
      }
    }
    const error = new UpstreamError('t0ps3cret')
    const { log, lines } = capturingLogger()
    log.error({ err: error }, 'upstream failed')
    expect(lines[0]).toMatchObject({ err: { type: 'UpstreamError', message: 'the provider refused the call', token: MASK } })
    expect(String((lines[0]!.err as { stack: string }).stack)).toContain('the provider refused the call')
    expect(JSON.stringify(lines)).not.toContain('t0ps3cret')
    expect(error.token).toBe('t0ps3cret')
  })
})

describe("the service's logger", () => {
  it('masks secrets in any line, and logs a request as method, url, host and address only', () => {
    const { log, lines } = capturingLogger()
    log.info({ body: { email: 'alice@acme.example', password: 'hunter2' } }, 'a login body')
    const request = {
      method: 'POST',
      url: '/webhook/esign/the-secret/',
      host: 'api.example',
      ip: '203.0.113.9',
      headers: { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln', 'content-hmac': 'sha256=abc' },
    }
    log.info({ req: request }, 'request completed')
    expect(lines[0]).toMatchObject({ body: { email: 'alice@acme.example', password: MASK } })
    expect(lines[1]!.req).toEqual({ method: 'POST', url: `/webhook/esign/${MASK}/`, host: 'api.example', remoteAddress: '203.0.113.9' })
    const all = JSON.stringify(lines)
    for (const secret of ['hunter2', 'the-secret', 'Bearer', 'sha256=abc']) expect(all).not.toContain(secret)
  })
})

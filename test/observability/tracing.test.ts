import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { DEMO_PASSWORD } from '../helpers/app.js'
import { useServerProcesses } from '../helpers/server-process.js'
import { scaled } from '../helpers/slowness.js'

const processes = useServerProcesses()

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`

interface LogLine {
  msg?: string
  trace_id?: string
  request_id?: string
  client_request_id?: string
  client_trace_id?: string
  req?: { url?: string }
}

const logLines = (output: string[]): LogLine[] =>
  output.flatMap((line) => {
    try {
      return [JSON.parse(line) as LogLine]
    } catch {
      return []
    }
  })

interface ExportedSpan {
  traceId: string
  name: string
}

/** A minimal OTLP/HTTP receiver (JSON encoding, POST /v1/traces) collecting every span it is sent. */
async function startReceiver(): Promise<{ server: Server; url: string; spans: ExportedSpan[] }> {
  const spans: ExportedSpan[] = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: { scopeSpans?: { spans?: ExportedSpan[] }[] }[]
        }
        for (const resource of body.resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []))
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans }
}

async function until<T>(what: string, check: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + scaled(timeoutMs)
  for (;;) {
    const value = check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const login = (baseUrl: string, headers: Record<string, string> = {}) =>
  fetch(`${baseUrl}/api/auth/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ email: 'alice@acme.example', password: DEMO_PASSWORD }),
  })

describe('trace context (issue 19)', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined
  afterEach(async () => {
    receiver?.server.closeAllConnections()
    await new Promise((resolve) => receiver?.server.close(resolve) ?? resolve(undefined))
    receiver = undefined
  })

  it("puts the gateway's traceparent trace id on the request's log line, and makes one without it (tracing off)", async () => {
    const service = await processes.start({ TRUST_PROXY: '127.0.0.1' })
    expect((await login(service.baseUrl, { traceparent: TRACEPARENT, 'x-request-id': 'with-trace' })).status).toBe(200)
    expect((await login(service.baseUrl, { 'x-request-id': 'without-trace' })).status).toBe(200)
    const withTrace = await until('the first request line', () => logLines(service.output).find((line) => line.request_id === 'with-trace'))
    expect(withTrace.trace_id).toBe(TRACE_ID)
    const without = await until('the second request line', () => logLines(service.output).find((line) => line.request_id === 'without-trace'))
    expect(without.trace_id).toMatch(/^[0-9a-f]{32}$/)
    expect(without.trace_id).not.toBe(TRACE_ID)
    // One start line a person can act on (the demo login only on the embedded demo database).
    const starts = logLines(service.output).filter((line) => /listening/i.test(line.msg ?? ''))
    expect(starts).toHaveLength(1)
    expect(starts[0]!.msg).toContain(`listening on ${service.baseUrl} (API docs ${service.baseUrl}/docs`)
    expect(starts[0]!.msg?.includes('demo login alice@acme.example')).toBe(process.env.TEST_DATABASE_URL === undefined)
  })

  it('exports the spans of a request, pg included, to an OTLP/HTTP receiver in the trace of its traceparent', async () => {
    receiver = await startReceiver()
    const service = await processes.start({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200', TRUST_PROXY: '127.0.0.1' })
    expect((await login(service.baseUrl, { traceparent: TRACEPARENT, 'x-request-id': 'traced' })).status).toBe(200)
    const spans = receiver.spans
    const server = await until('the request span', () => spans.find((span) => span.traceId === TRACE_ID))
    expect(server.traceId).toBe(TRACE_ID)
    const line = await until('the request line', () =>
      logLines(service.output).find((entry) => entry.request_id === 'traced' && entry.msg === 'request completed'),
    )
    expect(line.trace_id).toBe(TRACE_ID)
    // The database's spans, where there is a pool to instrument (PostgreSQL, not the embedded database).
    if (process.env.TEST_DATABASE_URL) {
      await until('a pg span in the trace', () => spans.find((span) => span.traceId === TRACE_ID && /^pg\./.test(span.name)))
    }
  })

  it("starts a trace and a request id of its own for a client that is not the gateway, logging the client's apart (issue 26, item 6)", async () => {
    receiver = await startReceiver()
    const service = await processes.start({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200' })
    const response = await login(service.baseUrl, { traceparent: TRACEPARENT, 'x-request-id': 'chosen-by-client' })
    expect(response.status).toBe(200)
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const line = await until('the request line', () =>
      logLines(service.output).find((entry) => entry.client_request_id === 'chosen-by-client' && entry.msg === 'request completed'),
    )
    expect(line).toMatchObject({ request_id: response.headers.get('x-request-id'), client_trace_id: TRACE_ID })
    expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/)
    expect(line.trace_id).not.toBe(TRACE_ID)
    const lineTraceId = line.trace_id
    await until('the request span', () => receiver!.spans.find((span) => span.traceId === lineTraceId))
    expect(receiver.spans.filter((span) => span.traceId === TRACE_ID)).toEqual([])
  })
})

import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): `version-traceid-parentid-flags`, lower-case
 * hex. Version ff is invalid; a later version may append fields, which are ignored.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-|$)/

const ALL_ZERO_TRACE = '0'.repeat(32)
const ALL_ZERO_PARENT = '0'.repeat(16)

/** The trace id of a valid `traceparent` header, else undefined. */
export function traceIdOf(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined
  const match = TRACEPARENT.exec(header.trim())
  if (!match) return undefined
  const [, version, traceId, parentId] = match
  if (version === 'ff' || (version === '00' && header.trim().length !== 55)) return undefined
  if (traceId === ALL_ZERO_TRACE || parentId === ALL_ZERO_PARENT) return undefined
  return traceId
}

/**
 * Where src/tracing.ts, when loaded, puts a function giving the active span's trace id, so that the
 * log lines carry the trace id of the exported spans. A global symbol, because src/tracing.ts is a
 * bundle of its own (dist/tracing.js) and shares no module with the service's.
 */
export const ACTIVE_TRACE_ID = Symbol.for('receivables-api.activeTraceId')

type ActiveTraceId = () => string | undefined

/**
 * Fastify's childLoggerFactory: every line of a request's logger carries `trace_id`, taken from the
 * active OpenTelemetry span when tracing is on, else from the gateway's `traceparent`, else made
 * here. The id goes on the request's log lines only: nothing the service calls is sent it.
 */
export function traceChildLoggerFactory(): NonNullable<FastifyServerOptions['childLoggerFactory']> {
  const activeTraceId = (globalThis as Record<symbol, ActiveTraceId | undefined>)[ACTIVE_TRACE_ID]
  return function childLogger(this: unknown, logger, bindings, options, rawRequest) {
    const request = rawRequest as IncomingMessage
    const traceId = activeTraceId?.() ?? traceIdOf(request.headers.traceparent) ?? randomUUID().replaceAll('-', '')
    bindings.trace_id = traceId // Fastify's fresh object for this request: no copy
    return (logger as FastifyBaseLogger).child(bindings, options)
  }
}

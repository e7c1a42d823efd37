import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

/** TRUST_PROXY as src/config.ts reads it: everyone, no one, a hop count, or the gateway's addresses and CIDRs. */
export type TrustProxySetting = boolean | number | string[]

/** Whether a request comes straight from the gateway: only it may name the request (X-Request-Id, traceparent). */
export type GatewayCheck = (request: IncomingMessage) => boolean

/**
 * The socket's peer checked against TRUST_PROXY, with Fastify's own address matching: the rule
 * Fastify applies to X-Forwarded-Host. A hop count cannot say who the peer is, so it trusts no one.
 */
export function gatewayCheck(setting: TrustProxySetting): GatewayCheck {
  if (setting === true) return () => true
  if (setting === false || typeof setting === 'number') return () => false
  const trusted = proxyAddr.compile(setting)
  return (request) => {
    const address = request.socket?.remoteAddress
    return address !== undefined && trusted(address, 0)
  }
}

/** A request id worth keeping or logging: a short token that cannot break a log line. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

const saneRequestId = (header: string | string[] | undefined): string | undefined =>
  typeof header === 'string' && REQUEST_ID.test(header) ? header : undefined

/** Fastify's genReqId: the gateway's X-Request-Id when it is a sane token, else one made here. */
export function requestIdGenerator(fromGateway: GatewayCheck): (request: IncomingMessage) => string {
  return (request) => (fromGateway(request) && saneRequestId(request.headers['x-request-id'])) || randomUUID()
}

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

/** Where src/app.ts puts its GatewayCheck, for src/tracing.ts (a bundle of its own, loaded before the app). */
export const GATEWAY_CHECK = Symbol.for('receivables-api.gatewayCheck')

const SET_ASIDE = Symbol('traceparent from a client')
type WithSetAside = IncomingMessage & { [SET_ASIDE]?: string | string[] }

/**
 * A traceparent from anyone but the gateway, taken off the request's headers before tracing or the
 * log reads it (the service starts a trace of its own), and kept for the log as the client's.
 */
export function setAsideClientTraceparent(request: IncomingMessage, fromGateway: GatewayCheck): void {
  const header = request.headers.traceparent
  if (header === undefined || fromGateway(request)) return
  ;(request as WithSetAside)[SET_ASIDE] = header
  delete request.headers.traceparent
}

/**
 * Fastify's childLoggerFactory: every line of a request's logger carries `trace_id`, taken from the
 * active OpenTelemetry span when tracing is on, else from the gateway's `traceparent`, else made
 * here. The id goes on the request's log lines only: nothing the service calls is sent it. What a
 * client sent instead of the gateway goes on them apart, when sane: `client_request_id`,
 * `client_trace_id`.
 */
export function traceChildLoggerFactory(fromGateway: GatewayCheck = () => false): NonNullable<FastifyServerOptions['childLoggerFactory']> {
  const activeTraceId = (globalThis as Record<symbol, ActiveTraceId | undefined>)[ACTIVE_TRACE_ID]
  return function childLogger(this: unknown, logger, bindings, options, rawRequest) {
    const request = rawRequest as WithSetAside
    setAsideClientTraceparent(request, fromGateway)
    const traceId = activeTraceId?.() ?? traceIdOf(request.headers.traceparent) ?? randomUUID().replaceAll('-', '')
    bindings.trace_id = traceId // Fastify's fresh object for this request: no copy
    const clientTraceId = traceIdOf(request[SET_ASIDE])
    if (clientTraceId !== undefined) bindings.client_trace_id = clientTraceId
    const clientRequestId = bindings.request_id === request.headers['x-request-id'] ? undefined : saneRequestId(request.headers['x-request-id'])
    if (clientRequestId !== undefined) bindings.client_request_id = clientRequestId
    return (logger as FastifyBaseLogger).child(bindings, options)
  }
}

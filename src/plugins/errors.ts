import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { defaultCode, isProblem, problemBody, WWW_AUTHENTICATE } from '../lib/problem.js'
import { isDatabaseReadOnly, isDatabaseUnavailable, isUnstorableText } from '../db/errors.js'
import { ConcurrencyLimitFull } from '../lib/concurrency-limit.js'

type ValidationIssue = NonNullable<FastifyError['validation']>[number]

/** `/document/key` → `document.key`; a missing property is named by itself. */
function fieldPath(issue: ValidationIssue): string {
  const base = issue.instancePath.split('/').filter(Boolean).join('.')
  const missing = (issue.params as { missingProperty?: string } | undefined)?.missingProperty
  if (missing) return base ? `${base}.${missing}` : missing
  return base || 'non_field_errors'
}

function describeIssue(issue: ValidationIssue): string {
  const params = issue.params as { missingProperty?: string; format?: string } | undefined
  if (params?.missingProperty) return 'This field is required.'
  if (issue.keyword === 'format' && params?.format) return `Must be a valid ${params.format}.`
  return issue.message ? `${issue.message[0]?.toUpperCase() ?? ''}${issue.message.slice(1)}.` : 'Invalid value.'
}

export function validationErrors(issues: ValidationIssue[]): Record<string, string[]> {
  const errors: Record<string, string[]> = {}
  for (const issue of issues) {
    const messages = (errors[fieldPath(issue)] ??= [])
    const message = describeIssue(issue)
    if (!messages.includes(message)) messages.push(message)
  }
  return errors
}

/** Fastify's own request-parsing errors, with the DRF-style code each maps to. */
const FRAMEWORK_ERRORS: Record<string, { status: number; code: string; detail: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type', detail: 'Unsupported media type; send application/json.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'parse_error', detail: 'Content-Length does not match the body.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'parse_error', detail: 'JSON parse error - the body is empty.' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'parse_error', detail: 'JSON parse error - the body is not valid JSON.' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', detail: 'The request body is too large.' },
  FST_ERR_CTP_INVALID_TYPE: { status: 400, code: 'parse_error', detail: 'The request body could not be read.' },
}

export function sendProblem(reply: FastifyReply, status: number, code: string, detail: string, extra: Record<string, unknown> = {}): FastifyReply {
  if (status === 401) reply.header('www-authenticate', WWW_AUTHENTICATE)
  reply.request.problemCode = code // on the request's log line
  return reply
    .code(status)
    .type('application/problem+json')
    .send(problemBody(status, code, detail, extra))
}

/**
 * Errors the router raises before any hook runs (Fastify's `frameworkErrors`): a path that is not
 * valid percent-encoding, or a path segment longer than the router takes. Both are a malformed
 * path: 400 like a malformed id, in the contract's shape, and never the path echoed back (it may
 * carry the webhook secret).
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.header('x-request-id', request.id)
  if (error.code === 'FST_ERR_BAD_URL' || error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    const message = error.code === 'FST_ERR_BAD_URL' ? 'Not a valid URL path (malformed percent-encoding).' : 'A path segment is too long.'
    return sendProblem(reply, 400, 'invalid', 'Invalid input.', { errors: { path: [message] } })
  }
  request.log.error({ err: error }, 'unexpected router failure')
  return sendProblem(reply, 500, 'server_error', 'A server error occurred.')
}

/** What an error is answered with, and what is counted and logged with it. */
interface Answer {
  status: number
  code: string
  detail: string
  extra?: Record<string, unknown>
  headers?: Record<string, string>
  /** The 503 cause counted (service_unavailable_responses_total). */
  cause?: 'database' | 'read_only' | 'handler_timeout' | 'hash_queue_full'
  /** Logged with the request id: a failure of ours, or of the database. */
  log?: { level: 'warn' | 'error'; message: string }
}

const TRY_AGAIN = 'The service is temporarily unavailable; try again shortly.'
/**
 * A 503 after the request sent a COMMIT, or a write outside a transaction, that the server did not
 * refuse (done, or lost in flight: src/db/write-ledger.ts): the answer must not suggest nothing happened.
 */
const MAYBE_APPLIED =
  'The service is temporarily unavailable, and the request may have been applied: check before sending it again, or send it again with the same Idempotency-Key.'

function unavailable(request: FastifyRequest, cause: NonNullable<Answer['cause']>, message: string): Answer {
  const detail = request.writes?.outcome === 'maybe' ? MAYBE_APPLIED : TRY_AGAIN
  return { status: 503, code: 'service_unavailable', detail, headers: { 'retry-after': '5' }, cause, log: { level: 'warn', message } }
}

/** The contract's answer to `error` (docs/api.md §1): problem details, never internals. */
function answerFor(error: FastifyError, request: FastifyRequest): Answer {
  if (isProblem(error)) {
    return {
      status: error.statusCode,
      code: error.code,
      detail: error.message,
      extra: error.extra ?? {},
      ...(error.headers ? { headers: error.headers } : {}),
    }
  }
  if (error.validation) return { status: 400, code: 'invalid', detail: 'Invalid input.', extra: { errors: validationErrors(error.validation) } }
  const framework = error.code ? FRAMEWORK_ERRORS[error.code] : undefined
  if (framework) return framework
  if (error instanceof SyntaxError && error.statusCode === 400) {
    return { status: 400, code: 'parse_error', detail: 'JSON parse error - the body is not valid JSON.' }
  }
  if (isUnstorableText(error)) {
    // Found by the database, so no field path: a NUL may hide in any string the route stores or looks up.
    return {
      status: 400,
      code: 'invalid',
      detail: 'Invalid input.',
      extra: { errors: { non_field_errors: ['Text must not contain the NUL character (\\u0000).'] } },
    }
  }
  if (isDatabaseReadOnly(error)) return unavailable(request, 'read_only', 'database refuses writes (read-only, or in recovery)')
  if (isDatabaseUnavailable(error)) return unavailable(request, 'database', 'database unavailable')
  if (error.code === 'FST_ERR_HANDLER_TIMEOUT') return timeoutAnswer(request)
  if (error instanceof ConcurrencyLimitFull) {
    // Password hashing is at its bound (src/auth/passwords.ts): refused at once rather than queued.
    return {
      status: 503,
      code: 'service_unavailable',
      detail: 'Too many requests are being processed; try again shortly.',
      headers: { 'retry-after': '1' },
      cause: 'hash_queue_full',
      log: { level: 'warn', message: 'password hashing queue full' },
    }
  }
  const status = error.statusCode ?? 500
  // Client errors from the framework or a plugin: their message is meant for the client.
  if (status < 500 && status >= 400) return { status, code: defaultCode(status), detail: error.message }
  return { status: 500, code: 'server_error', detail: 'A server error occurred.', log: { level: 'error', message: 'unexpected failure' } }
}

/** HANDLER_TIMEOUT ran out: 408 if the client is still sending its body, else 503. */
function timeoutAnswer(request: FastifyRequest): Answer {
  if (bodyStillArriving(request.raw)) {
    // The body is still arriving: the client is late, not the service (Node's REQUEST_TIMEOUT says the same).
    return { status: 408, code: 'request_timeout', detail: 'The request was not received in time.', headers: { connection: 'close' } }
  }
  return unavailable(request, 'handler_timeout', 'request took longer than HANDLER_TIMEOUT')
}

function record(app: FastifyInstance, request: FastifyRequest, error: unknown, answer: Answer): void {
  if (answer.log) request.log[answer.log.level]({ err: error }, answer.log.message)
  if (answer.cause) app.metrics.unavailableResponses.labels(answer.cause).inc()
}

/** Headers of the answer being replaced that describe its body or its resource. */
const REPLACED_HEADERS = /^(content-|location$|etag$|last-modified$|idempotent-replayed$)/

/**
 * Writes `answer` on the socket now, past the onSend hooks and the serializer: for an answer that
 * must not wait on them (HANDLER_TIMEOUT), or whose first attempt failed in them. An answer already
 * started cannot be mended: its connection is closed instead.
 */
function writeAnswer(reply: FastifyReply, answer: Answer): FastifyReply {
  const raw = reply.raw
  if (raw.headersSent || raw.destroyed) {
    if (!raw.writableEnded) raw.destroy()
    return reply
  }
  const body = JSON.stringify(problemBody(answer.status, answer.code, answer.detail, answer.extra))
  const headers: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined && !REPLACED_HEADERS.test(name)) headers[name] = value
  }
  if (answer.status === 401) headers['www-authenticate'] = WWW_AUTHENTICATE
  Object.assign(headers, answer.headers, { 'content-type': 'application/problem+json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
  reply.request.problemCode = answer.code
  raw.writeHead(answer.status, headers)
  raw.end(body)
  return reply
}

/** Replies whose error answer is on its way through the onSend hooks and the serializer, with what it counted. */
const answeringError = new WeakMap<FastifyReply, Answer['cause']>()

/**
 * The error handler. A failure while the error answer itself is sent (an onSend hook such as a side
 * write, the serializer) meets this handler again, as the parent scope's (see the plugin below), and
 * is answered past the hooks: never Fastify's own JSON, which would carry the error's code and message.
 */
function handleError(this: FastifyInstance, error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
  if (reply.sent) {
    // Answered already (HANDLER_TIMEOUT): the work it abandoned ended since, often on that account.
    request.log.info({ err: error }, 'failure after the request was answered')
    return undefined
  }
  const answer = answerFor(error, request)
  if (answeringError.has(reply)) {
    // One answer leaves, counted once: the first attempt's cause, if it counted one, stands for it.
    record(this, request, error, answeringError.get(reply) === undefined ? answer : { ...answer, cause: undefined })
    if (!answer.log) request.log.warn({ err: error }, 'failure while sending an error answer')
    return writeAnswer(reply, answer)
  }
  record(this, request, error, answer)
  answeringError.set(reply, answer.cause)
  if (answer.headers) reply.headers(answer.headers)
  return sendProblem(reply, answer.status, answer.code, answer.detail, answer.extra)
}

/**
 * HANDLER_TIMEOUT ran out (src/plugins/request-deadline.ts): answered now, past the onSend hooks,
 * whose side writes could wait on the very database that held the request.
 */
export function answerTimeout(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, error: Error): void {
  const answer = timeoutAnswer(request)
  // An error answer held in a hook replaced by this one: still one answer, counted once.
  record(app, request, error, answeringError.get(reply) === undefined ? answer : { ...answer, cause: undefined })
  writeAnswer(reply, answer)
}

/**
 * A body was announced and has not arrived whole. `complete` alone says nothing of a request without
 * a body: nobody reads its stream, so it stays false on a GET that the database held too long.
 */
function bodyStillArriving(raw: IncomingMessage): boolean {
  const announced = raw.headers['transfer-encoding'] !== undefined || Number(raw.headers['content-length'] ?? 0) > 0
  return announced && !raw.complete && !raw.readableEnded
}

/** The error and not-found handlers of docs/api.md §1: problem details, never internals. */
export default fp(
  async function errorsPlugin(app: FastifyInstance) {
    app.decorateRequest('problemCode', null)
    app.setErrorHandler(handleError)
    // Every scope registered from now on (each route plugin) gets the handler too, so that the one a
    // failing error answer meets next (the parent's) is this one again, never Fastify's default.
    app.addHook('onRegister', (instance) => {
      instance.setErrorHandler(handleError)
    })
    app.setNotFoundHandler((request, reply) => sendProblem(reply, 404, 'not_found', 'Not found.'))
  },
  { name: 'errors', dependencies: ['metrics'] },
)

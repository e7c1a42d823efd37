import type { IncomingMessage } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { defaultCode, isProblem, problemBody, WWW_AUTHENTICATE } from '../lib/problem.js'
import { isDatabaseUnavailable, isUnstorableText } from '../db/errors.js'
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

function handleError(this: FastifyInstance, error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (isProblem(error)) {
    if (error.headers) reply.headers(error.headers)
    return sendProblem(reply, error.statusCode, error.code, error.message, error.extra ?? {})
  }
  if (error.validation) {
    return sendProblem(reply, 400, 'invalid', 'Invalid input.', { errors: validationErrors(error.validation) })
  }
  const framework = error.code ? FRAMEWORK_ERRORS[error.code] : undefined
  if (framework) return sendProblem(reply, framework.status, framework.code, framework.detail)
  if (error instanceof SyntaxError && error.statusCode === 400) {
    return sendProblem(reply, 400, 'parse_error', 'JSON parse error - the body is not valid JSON.')
  }
  if (isUnstorableText(error)) {
    // Found by the database, so no field path: a NUL may hide in any string the route stores or looks up.
    return sendProblem(reply, 400, 'invalid', 'Invalid input.', {
      errors: { non_field_errors: ['Text must not contain the NUL character (\\u0000).'] },
    })
  }
  if (isDatabaseUnavailable(error)) {
    request.log.warn({ err: error }, 'database unavailable')
    this.metrics.unavailableResponses.labels('database').inc()
    reply.header('retry-after', '5')
    return sendProblem(reply, 503, 'service_unavailable', 'The service is temporarily unavailable; try again shortly.')
  }
  if (error.code === 'FST_ERR_HANDLER_TIMEOUT' && bodyStillArriving(request.raw)) {
    // The body is still arriving: the client is late, not the service (Node's REQUEST_TIMEOUT says the same).
    reply.header('connection', 'close')
    return sendProblem(reply, 408, 'request_timeout', 'The request was not received in time.')
  }
  if (error.code === 'FST_ERR_HANDLER_TIMEOUT') {
    request.log.warn({ err: error }, 'request took longer than HANDLER_TIMEOUT')
    this.metrics.unavailableResponses.labels('handler_timeout').inc()
    reply.header('retry-after', '5')
    return sendProblem(reply, 503, 'service_unavailable', 'The service is temporarily unavailable; try again shortly.')
  }
  if (error instanceof ConcurrencyLimitFull) {
    // Password hashing is at its bound (src/auth/passwords.ts): refused at once rather than queued.
    request.log.warn('password hashing queue full')
    this.metrics.unavailableResponses.labels('hash_queue_full').inc()
    reply.header('retry-after', '1')
    return sendProblem(reply, 503, 'service_unavailable', 'Too many requests are being processed; try again shortly.')
  }
  const status = error.statusCode ?? 500
  if (status < 500 && status >= 400) {
    // Client errors from the framework or a plugin: their message is meant for the client.
    return sendProblem(reply, status, defaultCode(status), error.message)
  }
  request.log.error({ err: error }, 'unexpected failure')
  return sendProblem(reply, 500, 'server_error', 'A server error occurred.')
}

/** The error and not-found handlers of docs/api.md §1: problem details, never internals. */
/**
 * A body was announced and has not arrived whole. `complete` alone says nothing of a request without
 * a body: nobody reads its stream, so it stays false on a GET that the database held too long.
 */
function bodyStillArriving(raw: IncomingMessage): boolean {
  const announced = raw.headers['transfer-encoding'] !== undefined || Number(raw.headers['content-length'] ?? 0) > 0
  return announced && !raw.complete && !raw.readableEnded
}

export default fp(
  async function errorsPlugin(app: FastifyInstance) {
    app.decorateRequest('problemCode', null)
    app.setErrorHandler(handleError)
    app.setNotFoundHandler((request, reply) => sendProblem(reply, 404, 'not_found', 'Not found.'))
  },
  { name: 'errors', dependencies: ['metrics'] },
)

import { STATUS_CODES } from 'node:http'
import { CloneType, Type, type Static, type TSchema } from '@sinclair/typebox'
import { StringEnum } from './common.js'
import type { PROBLEM_CODES, ProblemCode } from './problems.js'

/**
 * Builders for the `response` map of a route schema. Fastify serializes each answer with the
 * schema of its status and media type, and @fastify/swagger publishes the same map: a success is
 * JSON, every error is `application/problem+json`, and a route lists the problem cases it can answer
 * (statuses, descriptions and examples follow from the cases), so it cannot declare an error in
 * another media type or without saying when it happens.
 */

const JSON_MEDIA = 'application/json'
const PROBLEM_MEDIA = 'application/problem+json'

/**
 * Marks a response header the service always sends: the docs plugin turns it into the header
 * object's `required: true` (@fastify/swagger puts every other key into the header's schema).
 */
export const HEADER_REQUIRED = 'x-required'

export interface HeaderSpec {
  type: 'string' | 'integer'
  description: string
  [HEADER_REQUIRED]?: true
}

const REQUEST_ID: Record<string, HeaderSpec> = {
  'X-Request-Id': {
    [HEADER_REQUIRED]: true,
    type: 'string',
    description:
      "The gateway's `X-Request-Id` (from `TRUST_PROXY`'s addresses only) when it is a sane token, else one made here; it is on every log line of the request",
  },
}

/** On every limited route's answers (src/fairness/): draft-ietf-httpapi-ratelimit-headers, its structured-field syntax. */
const RATE_LIMIT: Record<string, HeaderSpec> = {
  'RateLimit-Policy': {
    type: 'string',
    description:
      'The quotas this request was counted against, e.g. `"reads";q=3000;w=10` (3,000 requests per 10 s for this user), and `"reads-company-role";…` for its company role (docs/api.md, Limits)',
  },
  RateLimit: { type: 'string', description: 'What is left of each quota and the seconds until it resets, e.g. `"reads";r=2990;t=7`' },
}

/** Extra headers an error status always carries (docs/api.md §1, §2). */
const STATUS_HEADERS: Partial<Record<number, Record<string, HeaderSpec>>> = {
  401: { 'WWW-Authenticate': { [HEADER_REQUIRED]: true, type: 'string', description: 'Always `Bearer realm="api"`' } },
  429: { 'Retry-After': { [HEADER_REQUIRED]: true, type: 'integer', description: 'Seconds until a new attempt may succeed' } },
  503: { 'Retry-After': { [HEADER_REQUIRED]: true, type: 'integer', description: 'Seconds to wait before retrying' } },
}

export interface NamedExample<T> {
  summary: string
  value: T
}
export type Examples<T> = Record<string, NamedExample<T>>

/** A success answered with a JSON body, with examples from the demo data. */
export function jsonResponse<T extends TSchema>(description: string, schema: T, examples: Examples<Static<T>>) {
  return {
    description,
    headers: { ...REQUEST_ID },
    content: { [JSON_MEDIA]: { schema, examples } } as { 'application/json': { schema: T; examples: Examples<Static<T>> } },
  }
}

const NO_STORE: Record<string, HeaderSpec> = {
  'Cache-Control': {
    [HEADER_REQUIRED]: true,
    type: 'string',
    description: 'Always `no-store`: responses carrying tokens are never cached (RFC 6749 §5.1)',
  },
}

/** A success that carries tokens: as jsonResponse, and never stored by a cache. */
export function tokenResponse<T extends TSchema>(description: string, schema: T, examples: Examples<Static<T>>) {
  const response = jsonResponse(description, schema, examples)
  return { ...response, headers: { ...response.headers, ...NO_STORE } }
}

/** A success without a body (204). `type: null` keeps @fastify/swagger from inventing content. */
export function emptyResponse(description: string) {
  return { type: 'null' as const, description, headers: { ...REQUEST_ID } }
}

/**
 * Named examples of a request body: @fastify/swagger moves them to the media type object, and the
 * service's Ajv knows the keyword as an annotation (src/app.ts).
 */
export const EXAMPLES_KEYWORD = 'x-examples'

/** A request body schema with named examples (shown and pre-filled by Swagger UI). */
export function withExamples<T extends TSchema>(schema: T, examples: Examples<Static<T>>): T {
  return CloneType(schema, { [EXAMPLES_KEYWORD]: examples })
}

/** A path parameter with the demo value Swagger UI pre-fills. */
export function withExample<T extends TSchema>(schema: T, example: Static<T>): T {
  return CloneType(schema, { examples: [example] })
}

// ------------------------------------------------------------------------------ problem cases

/** One error a route can answer: its stable code with that code's status, the detail sentence sent, and when. */
type CaseOf<C extends ProblemCode> = {
  readonly status: (typeof PROBLEM_CODES)[C]
  readonly code: C
  readonly detail: string
  /** Markdown; when the route answers this (shown in the response description). */
  readonly when: string
  /** Members beyond the standard five, as in the example (`errors`, `solicitation_id`…). */
  readonly extra?: Record<string, unknown>
  /** Headers this case sends beyond its status's (`Retry-After` on a 409 that may be retried). */
  readonly headers?: Record<string, HeaderSpec>
}
export type ProblemCase = { [C in ProblemCode]: CaseOf<C> }[ProblemCode]
export type ErrorStatus = ProblemCase['status']

/** The same case, described (and exemplified) for one route. */
export function when(problemCase: ProblemCase, text: string, extra?: Record<string, unknown>): ProblemCase {
  return { ...problemCase, when: text, extra: extra ?? problemCase.extra }
}

/** `400 invalid` with the messages a route really answers for its fields. */
export function invalid(
  errors: Record<string, string[]>,
  text = 'A parameter or body field is missing or malformed; `errors` lists the messages per field path',
): ProblemCase {
  return { status: 400, code: 'invalid', detail: 'Invalid input.', when: text, extra: { errors } }
}

export function problemExample(problemCase: ProblemCase) {
  return {
    type: `urn:problem:${problemCase.code}`,
    title: STATUS_CODES[problemCase.status] ?? 'Error',
    status: problemCase.status,
    detail: problemCase.detail,
    code: problemCase.code,
    ...problemCase.extra,
  }
}

/** The problem cases shared by routes; routes narrow `when` with `when()`. */
export const Problems = {
  parseError: {
    status: 400,
    code: 'parse_error',
    detail: 'JSON parse error - the body is not valid JSON.',
    when: 'The body is not JSON (or is empty), or nests arrays and objects deeper than 64 levels',
  },
  notAuthenticated: {
    status: 401,
    code: 'not_authenticated',
    detail: 'Authentication credentials were not provided.',
    when: 'No `Authorization: Bearer <access>` header',
  },
  tokenNotValid: {
    status: 401,
    code: 'token_not_valid',
    detail: 'Token is invalid or expired',
    when: 'The access token is malformed, expired, forged or of another type, or its user was disabled or its session revoked',
  },
  permissionDenied: {
    status: 403,
    code: 'permission_denied',
    detail: 'You do not have permission to perform this action.',
    when: "The caller's membership of `company_role_id` lacks the route's permission",
  },
  wrongRole: {
    status: 403,
    code: 'wrong_role',
    detail: 'This action is for a buyer company role.',
    when: 'The company role is of the other kind',
  },
  gone: {
    status: 410,
    code: 'gone',
    detail: 'This operation was removed at its sunset date; the Link header names its replacement.',
    when: 'After the sunset date of this deprecated operation (docs/versioning.md)',
  },
  notFound: {
    status: 404,
    code: 'not_found',
    detail: 'Not found.',
    when: 'The caller is not a member of `company_role_id` (the same answer whether or not it exists)',
  },
  requestTimeout: {
    status: 408,
    code: 'request_timeout',
    detail: 'The request was not received in time.',
    when: 'The body was still arriving when `HANDLER_TIMEOUT` (10 s) ran out; the connection is closed',
  },
  payloadTooLarge: {
    status: 413,
    code: 'payload_too_large',
    detail: 'The request body is too large.',
    when: 'The body is over 16 KiB',
  },
  unsupportedMediaType: {
    status: 415,
    code: 'unsupported_media_type',
    detail: 'Unsupported media type; send application/json.',
    when: 'The body is not `application/json`',
  },
  throttled: {
    status: 429,
    code: 'throttled',
    detail: 'Request was throttled. Expected available in 60 seconds.',
    when: 'Too many failed logins from this client for this e-mail, for this account or from this address; `Retry-After` is the real wait: the rest of the window, or a second or two when only attempts still being checked hold the limit (concurrent logins wait for those instead)',
  },
  rateLimited: {
    status: 429,
    code: 'rate_limited',
    detail: 'Too many requests for this caller in this window. Retry in 7 seconds.',
    when: "The caller (the token's user, its company role, or on a public route its address) spent its quota of this class of route for the window, or has too many requests in flight; `Retry-After` is the wait, `RateLimit` says what is left (docs/api.md, Limits)",
  },
  serverError: {
    status: 500,
    code: 'server_error',
    detail: 'A server error occurred.',
    when: 'An unexpected failure; the body holds no internals, the log has them under the request id',
  },
  serviceUnavailable: {
    status: 503,
    code: 'service_unavailable',
    detail: 'The service is temporarily unavailable; try again shortly.',
    when: 'The database cannot be reached or refuses writes (a failover), the request took longer than `HANDLER_TIMEOUT`, this instance is shutting down, or it is saturated and sheds the less critical requests first (large reads, then reads, then writes); retry after `Retry-After` seconds. When the request may have been applied before, `detail` says so: check first, or retry with the same `Idempotency-Key`',
  },
} as const satisfies Record<string, ProblemCase>

/** The cases of every route that carries a bearer token. */
export const BEARER_PROBLEMS: readonly ProblemCase[] = [Problems.notAuthenticated, Problems.tokenNotValid]
/** The cases of every route that reads a JSON body of at most 16 KiB. */
export const BODY_PROBLEMS: readonly ProblemCase[] = [
  Problems.parseError,
  Problems.requestTimeout,
  Problems.payloadTooLarge,
  Problems.unsupportedMediaType,
]
/** Any route can fail unexpectedly, lose its database or be answered while the instance drains. */
const EVERY_ROUTE: readonly ProblemCase[] = [Problems.rateLimited, Problems.serverError, Problems.serviceUnavailable]

function headerObjects(status: number) {
  return { ...REQUEST_ID, ...RATE_LIMIT, ...STATUS_HEADERS[status] }
}

/**
 * The Problem schema with `code` narrowed to the codes this status of this route lists: a generated
 * client switches on them exhaustively, and every answer the tests receive is validated against it.
 */
function problemSchema(codes: readonly ProblemCode[]) {
  const narrowed = Type.Object({ code: StringEnum([...new Set(codes)], { description: 'The codes this route answers with this status' }) })
  // Typed unknown, as the plain reference was: handlers throw problems, they never return them.
  return Type.Unsafe<unknown>({ allOf: [Type.Ref('Problem'), narrowed] })
}

/** One error response: the Problem schema, a line per code, an example per code. */
function problemResponse(status: ErrorStatus, cases: readonly ProblemCase[]) {
  const lines = cases.map((problemCase) => `- \`${problemCase.code}\`: ${problemCase.when}`)
  const examples: Examples<ReturnType<typeof problemExample>> = {}
  for (const problemCase of cases) {
    const name = examples[problemCase.code] ? `${problemCase.code}_${Object.keys(examples).length}` : problemCase.code
    examples[name] = { summary: problemCase.when.replace(/`/g, ''), value: problemExample(problemCase) }
  }
  return {
    description: `${STATUS_CODES[status] ?? 'Error'}:\n${lines.join('\n')}`,
    headers: Object.assign(headerObjects(status), ...cases.map((problemCase) => problemCase.headers ?? {})) as Record<string, HeaderSpec>,
    content: { [PROBLEM_MEDIA]: { schema: problemSchema(cases.map((problemCase) => problemCase.code)), examples } },
  }
}

type SuccessStatus = 200 | 201 | 204

/**
 * A route's whole `response` map: its successes, and an error response per status of the cases it
 * lists (plus 500 and 503, which every route can answer).
 */
export function routeResponses<S extends Partial<Record<SuccessStatus, object>>>(success: S, cases: readonly ProblemCase[]) {
  const byStatus = new Map<ErrorStatus, ProblemCase[]>()
  for (const problemCase of [...cases, ...EVERY_ROUTE]) {
    const list = byStatus.get(problemCase.status) ?? []
    if (!list.some((known) => known.code === problemCase.code)) list.push(problemCase)
    byStatus.set(problemCase.status, list)
  }
  const errors: Record<number, ReturnType<typeof problemResponse>> = {}
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) errors[status] = problemResponse(status, byStatus.get(status) ?? [])
  const limited: Record<string, object> = {}
  for (const [status, response] of Object.entries(success) as [string, { headers?: object }][]) {
    limited[status] = { ...response, headers: { ...response.headers, ...RATE_LIMIT } }
  }
  return { ...limited, ...errors } as S & Record<ErrorStatus, ReturnType<typeof problemResponse>>
}

import { rateLimitOf, type RateLimitQuota } from './rate-limit.js'
import { ERROR_CODES, type operations } from './openapi.js'

/** The operations of the API, by their OpenAPI operationId. */
export type OperationId = keyof operations

/** The problem codes an operation documents (any status), from the OpenAPI document. */
export type ErrorCode<Operation extends OperationId> = Operation extends OperationId ? (typeof ERROR_CODES)[Operation][number] : never

/** Every problem code the API documents. */
export type ProblemCode = ErrorCode<OperationId>

/** `code` of an answer whose code its operation does not document (a newer API's, or none): see `rawCode`. */
export type UnknownCode = 'unknown'

/** A problem document's fields (RFC 9457, with DRF's `code` and `errors`). */
export interface ProblemFields {
  type?: string
  title?: string
  status?: number
  detail?: string
  code?: string
  errors?: Record<string, string[]>
}

/**
 * An answer with an error status. `code` is one of the operation's documented codes (a misspelled
 * one does not compile), or `'unknown'` for one this client does not know yet, from a newer version
 * of the API (docs/versioning.md: codes and error statuses are added in minor versions), whose
 * text is in `rawCode`: handle it by its status, and a status you do not know by its class
 * (`kind`), as RFC 9110 asks of every HTTP client.
 */
export class ApiError<Code extends string = ProblemCode> extends Error {
  override readonly name = 'ApiError'
  readonly operation: string
  readonly status: number
  readonly code: Code | UnknownCode
  /** The code as the answer sent it, known or not (`http_<status>` when it sent none). */
  readonly rawCode: string
  readonly detail: string
  /** With `invalid`: the messages per field path. */
  readonly errors: Record<string, string[]>
  /** The service's `X-Request-Id`: quote it when asking the API's operators about this answer. */
  readonly requestId: string | undefined
  /** Seconds to wait before sending again (`Retry-After`), when the answer said. */
  readonly retryAfter: number | undefined
  /** The caller's quotas (`RateLimit` fields), the nearest to its end first; with `429 rate_limited`, the spent one first. */
  readonly rateLimit: RateLimitQuota[]

  constructor(operation: string, status: number, problem: ProblemFields, headers: { get(name: string): string | null }) {
    const rawCode = problem.code ?? `http_${status}`
    super(`${operation}: ${status} ${rawCode}${problem.detail ? `: ${problem.detail}` : ''}`)
    this.operation = operation
    this.status = status
    this.rawCode = rawCode
    const known: readonly string[] | undefined = (ERROR_CODES as Record<string, readonly string[]>)[operation]
    this.code = known?.includes(rawCode) ? (rawCode as Code) : 'unknown'
    this.detail = problem.detail ?? ''
    this.errors = problem.errors ?? {}
    this.requestId = headers.get('x-request-id') ?? undefined
    this.rateLimit = rateLimitOf(headers)
    const retryAfter = Number(headers.get('retry-after') ?? Number.NaN)
    this.retryAfter = Number.isFinite(retryAfter) ? retryAfter : undefined
  }

  /** `client`: this request failed and sending it again as is will not help; `server`: the service failed and did nothing. */
  get kind(): 'client' | 'server' {
    return this.status >= 500 ? 'server' : 'client'
  }
}

/** Narrows an error to an ApiError, typed with the codes `operation` documents. */
export function isApiError<Operation extends OperationId>(error: unknown, operation?: Operation): error is ApiError<ErrorCode<Operation>> {
  return error instanceof ApiError && (operation === undefined || error.operation === operation)
}

/** The request never got an answer (the connection failed or was lost), after every attempt allowed. */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError'
  readonly operation: string
  constructor(operation: string, cause: unknown) {
    super(`${operation}: no answer (${cause instanceof Error ? cause.message : String(cause)})`, { cause })
    this.operation = operation
  }
}

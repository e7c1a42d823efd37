import { STATUS_CODES } from 'node:http'
import { httpErrors, type HttpError } from '@fastify/sensible'
import type { CodeOf, ProblemCode } from '../../schemas/problems.js'

/** DRF's default codes, used when an error names none. */
const DEFAULT_CODES: Record<number, ProblemCode> = {
  400: 'invalid',
  401: 'not_authenticated',
  403: 'permission_denied',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'throttled',
  500: 'server_error',
  503: 'service_unavailable',
}

export interface ProblemBody {
  type: string
  title: string
  status: number
  detail: string
  code: string
  [extra: string]: unknown
}

export interface ProblemOptions {
  /** Extra members of the problem body, such as `errors` or `solicitation_id`. */
  extra?: Record<string, unknown>
  headers?: Record<string, string>
}

/**
 * An error that the error handler turns into problem details. Routes and rules throw these;
 * `code` is the stable machine word (docs/api.md), one of schemas/problems.ts for that status.
 */
export function problem<S extends number>(status: S, code: CodeOf<S>, detail: string, options: ProblemOptions = {}): HttpError {
  // A problem is an answer, never logged with its stack: capturing one was a tenth of a 429's CPU.
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return httpErrors.createError(status, detail, { code, extra: options.extra, headers: options.headers, isProblem: true })
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
}

/** Errors made by `problem()`: their status, code and detail are meant for the client, 5xx included. */
export function isProblem(error: unknown): error is HttpError & { code: string; extra?: Record<string, unknown>; headers?: Record<string, string> } {
  return typeof error === 'object' && error !== null && (error as { isProblem?: unknown }).isProblem === true
}

export function defaultCode(status: number): string {
  return DEFAULT_CODES[status] ?? (status >= 500 ? 'server_error' : 'error')
}

export function problemBody(status: number, code: string, detail: string, extra: Record<string, unknown> = {}): ProblemBody {
  return {
    type: `urn:problem:${code}`,
    title: STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    code,
    ...extra,
  }
}

/** Marks an answer of 401 as the contract asks (§1). */
export const WWW_AUTHENTICATE = 'Bearer realm="api"'

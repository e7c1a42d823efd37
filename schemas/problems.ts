/**
 * Every problem `code` the service answers, with its status: the one list the error helpers take
 * codes from (src/lib/problem.ts types them with it) and the route schemas declare theirs from
 * (schemas/responses.ts makes each error response's `code` an enum of the codes its route lists).
 * A new code is one line here, then one line in the route's problem cases.
 */
export const PROBLEM_CODES = {
  invalid: 400,
  parse_error: 400,
  bad_request: 400,
  invalid_link: 400,
  not_authenticated: 401,
  token_not_valid: 401,
  no_active_account: 401,
  invalid_signature: 401,
  permission_denied: 403,
  wrong_role: 403,
  not_found: 404,
  unsupported_version: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  request_timeout: 408,
  conflict: 409,
  solicitation_already_open: 409,
  nothing_to_request: 409,
  bank_account_in_use: 409,
  last_bank_account: 409,
  tax_id_immutable: 409,
  duplicate_customer: 409,
  idempotency_key_in_use: 409,
  idempotency_replay_expired: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  throttled: 429,
  rate_limited: 429,
  header_too_large: 431,
  server_error: 500,
  service_unavailable: 503,
} as const

export type ProblemCode = keyof typeof PROBLEM_CODES
/** The codes of one status: `CodeOf<409>` is `'conflict' | 'solicitation_already_open' | …`. */
export type CodeOf<S extends number> = { [C in ProblemCode]: (typeof PROBLEM_CODES)[C] extends S ? C : never }[ProblemCode]

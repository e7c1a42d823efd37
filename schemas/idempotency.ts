import { Type } from '@sinclair/typebox'
import type { HeaderSpec, ProblemCase } from './responses.js'

/**
 * `Idempotency-Key` (the IETF httpapi draft's header, as Stripe uses it) on routes 5, 10 and 11:
 * the route's schema takes `headers: IdempotencyHeaders`, lists `IDEMPOTENCY_PROBLEMS` and wraps its
 * success in `replayable()`; `config: { idempotency: true }` turns it on (src/idempotency/).
 */

export const IDEMPOTENCY_KEY_MAX = 255

/** Printable ASCII without the space: a UUID, a ULID, `order-1234:retry`… */
export const IDEMPOTENCY_KEY_PATTERN = '^[!-~]+$'

export const IDEMPOTENCY_DESCRIPTION = [
  'Makes a retry safe: the first request with a key runs and its answer (status and body) is kept 24 h per',
  'caller, route and key; a retry with the same key and the same request (path and body) gets that answer again,',
  'with `Idempotent-Replayed: true`, and runs nothing. The same key with another path or body is',
  '`422 idempotency_key_reused`; while the first request still runs, `409 idempotency_key_in_use` with',
  '`Retry-After`. 1 to 255 printable ASCII characters without spaces (else `400 invalid`); use a new UUID per',
  'operation. Answers 500 and 503 are not kept: nothing was done, and the retry runs (a 503 whose `detail` says',
  'the outcome is unknown may have been done: the retry then replays it). Without the header the route behaves',
  'as it always did. A caller has at most `IDEMPOTENCY_KEYS_PER_CALLER` (10,000) new keys kept per `IDEMPOTENCY_KEY_WINDOW` (1 h);',
  'beyond, a new key is `429 throttled` with `Retry-After`.',
].join(' ')

export const IdempotencyHeaders = Type.Object({
  'Idempotency-Key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: IDEMPOTENCY_KEY_MAX,
      pattern: IDEMPOTENCY_KEY_PATTERN,
      description: IDEMPOTENCY_DESCRIPTION,
      examples: ['5f2c7d8e-4b1a-4c3e-9f60-2d7a1b8c9e01'],
    }),
  ),
})

const REPLAYED: Record<string, HeaderSpec> = {
  'Idempotent-Replayed': {
    type: 'string',
    description: "`true` when this answer replays the first answer to the request's `Idempotency-Key`; absent otherwise",
  },
}

/** A success response of an idempotent route: it may be a replay. */
export function replayable<R extends { headers: Record<string, unknown> }>(response: R): R {
  return { ...response, headers: { ...response.headers, ...REPLAYED } }
}

export const IdempotencyProblems = {
  inUse: {
    status: 409,
    code: 'idempotency_key_in_use',
    detail: 'A request with this Idempotency-Key is still being processed; retry shortly.',
    when: 'A request with the same `Idempotency-Key` is still running; retry after `Retry-After` seconds',
    headers: { 'Retry-After': { type: 'integer', description: 'Seconds to wait before retrying (with `idempotency_key_in_use`)' } },
  },
  reused: {
    status: 422,
    code: 'idempotency_key_reused',
    detail: 'This Idempotency-Key was already used with another request; use a new key.',
    when: 'The `Idempotency-Key` was used with another path or body within 24 h',
  },
  quota: {
    status: 429,
    code: 'throttled',
    detail:
      'Too many new Idempotency-Keys from this caller in this window; retry after Retry-After seconds (a retry of a key already used is always answered), or send the request without a key.',
    when: "The caller (the token's user; route 10: the link) has had `IDEMPOTENCY_KEYS_PER_CALLER` (10,000) new keys kept within `IDEMPOTENCY_KEY_WINDOW` (1 h); `Retry-After` is the rest of the window. A retry of a key already used is still answered",
  },
  replayExpired: {
    status: 409,
    code: 'idempotency_replay_expired',
    detail:
      'The request with this Idempotency-Key was done, and its answer, which holds a session, is replayed only for a few seconds: log in to start a new session.',
    when: 'A retry with the same `Idempotency-Key` came after `REFRESH_REUSE_GRACE` (30 s): the account is confirmed, its tokens are not handed out again; log in',
  },
} as const satisfies Record<string, ProblemCase>

export const IDEMPOTENCY_PROBLEMS: readonly ProblemCase[] = [IdempotencyProblems.inUse, IdempotencyProblems.reused, IdempotencyProblems.quota]

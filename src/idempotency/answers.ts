import type { FastifyReply, FastifyRequest } from 'fastify'
import { problem, problemBody } from '../lib/problem.js'
import { openAnswer } from './key.js'
import type { Claim, KeyRow } from './repository.js'

export const REPLAYED_HEADER = 'idempotent-replayed'

const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'

export const DETAILS = {
  inUse: 'A request with this Idempotency-Key is still being processed; retry shortly.',
  reused: 'This Idempotency-Key was already used with another request; use a new key.',
  notDone: 'The service is temporarily unavailable and nothing was done; try again shortly.',
  replayExpired:
    'The request with this Idempotency-Key was done, and its answer, which holds a session, is replayed only for a few seconds: log in to start a new session.',
  quota:
    'Too many new Idempotency-Keys from this caller in this window; retry after Retry-After seconds (a retry of a key already used is always answered), or send the request without a key.',
  notReplicated:
    'This request may have been applied: the database committed it but could not confirm it on its standby. Retry with the same Idempotency-Key to learn the outcome.',
  unknown:
    'The connection to the database was lost while this request was being committed; retry with the same Idempotency-Key to learn the outcome.',
}

/** A keyed request as its key's row names it, and the key that seals its answer. */
export interface KeyedRequest extends Claim {
  key: string
  /** On a public route only a success is kept: a request that fails its link reserves nothing. */
  successOnly: boolean
}

/** The 429 of the key quota, with the whole seconds until a new key is taken again as Retry-After. */
export function throttledKeys(waitMs: number): Error {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  return problem(429, 'throttled', DETAILS.quota, { headers: { 'retry-after': String(retryAfter) } })
}

/** A problem answer written from a hook (the error handler is not there to write it). */
export function problemText(request: FastifyRequest, reply: FastifyReply, status: number, code: string, detail: string): string {
  request.problemCode = code
  reply.removeHeader('location')
  reply.code(status).header('content-type', PROBLEM_TYPE)
  return JSON.stringify(problemBody(status, code, detail))
}

/** The kept answer of the key (with `Idempotent-Replayed`), or 422 when the key came with another request. */
export async function keptAnswer(request: FastifyRequest, reply: FastifyReply, held: KeyedRequest, row: KeyRow): Promise<string> {
  if (!held.fingerprint.equals(Buffer.from(row.fingerprint))) return problemText(request, reply, 422, 'idempotency_key_reused', DETAILS.reused)
  const { idempotencyReplayFor: replayFor, idempotencyReplayable: replayable } = request.routeOptions.config
  if (replayFor !== undefined && row.age > replayFor) return problemText(request, reply, 409, 'idempotency_replay_expired', DETAILS.replayExpired)
  const answer = openAnswer(held.key, held.scope, held.route, row.answer)
  if (replayable && row.status < 400 && !(await replayable(answer.body))) {
    return problemText(request, reply, 409, 'idempotency_replay_expired', DETAILS.replayExpired)
  }
  request.problemCode = row.status >= 400 ? ((JSON.parse(answer.body) as { code?: string }).code ?? null) : null
  reply.removeHeader('location')
  reply.code(row.status).header(REPLAYED_HEADER, 'true')
  if (answer.location) reply.header('location', answer.location)
  if (answer.contentType) reply.header('content-type', answer.contentType)
  return answer.body
}

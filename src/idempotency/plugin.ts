import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema } from 'fastify'
import fp from 'fastify-plugin'
import type { ControlledTransaction } from 'kysely'
import { CommitNotReplicated, isDatabaseUnavailable } from '../db/errors.js'
import { problem, problemBody } from '../lib/problem.js'
import type { Database } from '../../db/types.js'
import { outcomeOfLostCommit } from './commit.js'
import { canonicalJson, fingerprint, keyHash, openAnswer, sealAnswer, sha256 } from './key.js'
import type { KeyQuota, QuotaPlace } from './quota.js'
import { findKey, insertAnswer, lockKey, type Claim, type KeyRow } from './repository.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route honours `Idempotency-Key` (src/idempotency/); its schema declares the header (schemas/idempotency.ts). */
    idempotency?: boolean
    /**
     * Seconds a kept answer is replayed, when less than the key lives: route 10's holds a session,
     * replayed only within the refresh grace (docs/decisions.md); later, 409 idempotency_replay_expired.
     */
    idempotencyReplayFor?: number
    /**
     * Whether a kept 2xx answer may still be replayed: route 10's, only while the session it started
     * has not been refreshed (docs/retries.md); else 409 idempotency_replay_expired, as past the grace.
     */
    idempotencyReplayable?(answerBody: string): Promise<boolean>
  }
  interface FastifyRequest {
    /** The key this request holds, with the transaction its work, and then its answer, commit in. */
    idempotency: HeldKey | null
  }
  interface FastifyInstance {
    idempotencyHooks: KeyHooks
  }
}

interface KeyHooks {
  takeKey(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>
  commitAnswer(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown>
  endAbandoned(request: FastifyRequest): Promise<void>
}

/**
 * A keyed route's hooks, in the order the route constructs declare them (src/tenancy/routes.ts):
 * preHandler takes the key (after admission), onSend commits the answer with the work, onResponse
 * rolls back a transaction no answer ended. They call this plugin's, which holds the app's database.
 */
export const idempotencyHooks = {
  takeKey: (request: FastifyRequest, reply: FastifyReply) => request.server.idempotencyHooks.takeKey(request, reply),
  commitAnswer: (request: FastifyRequest, reply: FastifyReply, payload: unknown) =>
    request.server.idempotencyHooks.commitAnswer(request, reply, payload),
  endAbandoned: (request: FastifyRequest) => request.server.idempotencyHooks.endAbandoned(request),
}

/** A keyed route declares the header in its schema (schemas/idempotency.ts), so the document shows it. */
export function requireKeyHeader(url: string, schema: FastifySchema | undefined): void {
  const headers = (schema?.headers ?? {}) as { properties?: Record<string, unknown> }
  if (!Object.keys(headers.properties ?? {}).some((name) => name.toLowerCase() === HEADER)) {
    throw new Error(`${url}: an idempotency route must declare the ${HEADER} header in its schema (schemas/idempotency.ts)`)
  }
}

interface KeyedRequest extends Claim {
  key: string
  /** On a public route only a success is kept: a request that fails its link reserves nothing. */
  successOnly: boolean
}

interface HeldKey extends KeyedRequest {
  trx: ControlledTransaction<Database>
  /** Its place in the caller's quota of keys: counted once the answer is kept, else given back. */
  place: QuotaPlace
}

export interface IdempotencyPluginOptions {
  /** New keys per caller and window (src/idempotency/quota.ts). */
  quota: KeyQuota
}

const HEADER = 'idempotency-key'
export const REPLAYED_HEADER = 'idempotent-replayed'

const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'

const DETAILS = {
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

/**
 * Who a key belongs to: the token's user (admitted by the tenancy pipeline before this runs, so a
 * request that fails its token or membership never reserves a key), or on a public route its path,
 * which holds its credential (route 10's link).
 */
function scopeOf(request: FastifyRequest): string {
  if (request.routeOptions.config.public) return `path:${sha256(canonicalJson(request.params)).toString('base64url')}`
  if (!request.auth) throw new Error('an Idempotency-Key route ran before its principal was admitted')
  return `user:${request.auth.user.id}`
}

function keyedRequest(request: FastifyRequest, key: string): KeyedRequest {
  const route = `${request.method} ${request.routeOptions.url}`
  const scope = scopeOf(request)
  return {
    key,
    scope,
    route,
    keyHash: keyHash(key),
    fingerprint: fingerprint(key, { method: request.method, route, params: request.params, body: request.body }),
    successOnly: request.routeOptions.config.public === true,
  }
}

/** The 429 of the key quota, with the whole seconds until a new key is taken again as Retry-After. */
function throttledKeys(waitMs: number): Error {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  return problem(429, 'throttled', DETAILS.quota, { headers: { 'retry-after': String(retryAfter) } })
}

/** A problem answer written from a hook (the error handler is not there to write it). */
function problemText(request: FastifyRequest, reply: FastifyReply, status: number, code: string, detail: string): string {
  request.problemCode = code
  reply.removeHeader('location')
  reply.code(status).header('content-type', PROBLEM_TYPE)
  return JSON.stringify(problemBody(status, code, detail))
}

/** The kept answer of the key (with `Idempotent-Replayed`), or 422 when the key came with another request. */
async function keptAnswer(request: FastifyRequest, reply: FastifyReply, held: KeyedRequest, row: KeyRow): Promise<string> {
  if (!held.fingerprint.equals(Buffer.from(row.fingerprint))) return problemText(request, reply, 422, 'idempotency_key_reused', DETAILS.reused)
  const replayFor = request.routeOptions.config.idempotencyReplayFor
  if (replayFor !== undefined && row.age > replayFor) return problemText(request, reply, 409, 'idempotency_replay_expired', DETAILS.replayExpired)
  const answer = openAnswer(held.key, held.scope, held.route, row.answer)
  const replayable = request.routeOptions.config.idempotencyReplayable
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

/**
 * `Idempotency-Key` (docs/retries.md): a keyed request runs in one transaction that takes the key's
 * lock, runs the route on it (`request.db`), and INSERTs the answer before its COMMIT, which happens
 * before a byte of the answer is sent. The work and its kept answer commit together or not at all,
 * so there is never a key claimed without its answer, and a request that dies leaves nothing.
 */
export default fp(
  async function idempotencyPlugin(app: FastifyInstance, { quota }: IdempotencyPluginOptions) {
    app.decorateRequest('idempotency', null)

    const unavailable = (request: FastifyRequest, reply: FastifyReply, error: unknown, detail: string): string => {
      request.log.warn({ err: error }, 'idempotency: the answer could not be committed')
      app.metrics.unavailableResponses.labels('database').inc()
      reply.header('retry-after', '5')
      return problemText(request, reply, 503, 'service_unavailable', detail)
    }

    /** Ends a transaction that commits nothing; a failure only means the connection is gone, which ends it too. */
    const rollBack = (request: FastifyRequest, trx: ControlledTransaction<Database>): Promise<void> =>
      trx
        .rollback()
        .execute()
        .catch((error: unknown) => request.log.warn({ err: error }, 'idempotency: rollback failed'))

    /** Takes the key and opens the request's transaction, replays the kept answer, or refuses: 409, 422. */
    async function takeKey(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
      const key = request.headers[HEADER]
      if (typeof key !== 'string') return undefined
      const keyed = keyedRequest(request, key)
      const trx = await app.db.startTransaction().execute()
      let locked: Awaited<ReturnType<typeof lockKey>>
      try {
        locked = await lockKey(trx, keyed)
      } catch (error) {
        await rollBack(request, trx)
        throw error
      }
      if (locked.locked && !locked.row) {
        // Only a new key counts against the caller's quota: a replay or a refusal stores nothing.
        const taken = await quota.take(keyed.scope)
        if (!taken.granted) {
          void rollBack(request, trx)
          throw throttledKeys(taken.waitMs)
        }
        request.idempotency = { ...keyed, trx, place: taken.place }
        request.transaction = trx
        return undefined
      }
      // Nothing to wait for: the answer does not depend on the rollback, which the connection's next user waits for.
      void rollBack(request, trx)
      // A kept answer is final: replayed even while another retry holds the lock to look at it.
      if (locked.row) {
        if (!keyed.fingerprint.equals(Buffer.from(locked.row.fingerprint))) throw problem(422, 'idempotency_key_reused', DETAILS.reused)
        return reply.send(await keptAnswer(request, reply, keyed, locked.row))
      }
      // Still running: never a wait that holds a pooled connection, the client waits instead.
      throw problem(409, 'idempotency_key_in_use', DETAILS.inUse, { headers: { 'retry-after': '1' } })
    }

    /**
     * After the transaction ended without this request's answer: another request's, if one committed
     * meanwhile; undefined when none did, or when the database cannot say (the caller's answer then
     * stands: this request's own work was rolled back either way).
     */
    async function answerCommittedMeanwhile(request: FastifyRequest, reply: FastifyReply, held: HeldKey): Promise<string | undefined> {
      try {
        const row = await findKey(app.db, held)
        return row && (await keptAnswer(request, reply, held, row))
      } catch (error) {
        request.log.warn({ err: error }, 'idempotency: the key could not be read again')
        return undefined
      }
    }

    /** Writes the answer and commits it with the work, before the client gets a byte; a 5xx commits nothing. */
    async function commitAnswer(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
      const held = request.idempotency
      if (!held) return payload
      request.idempotency = null
      request.transaction = null
      let kept = false
      try {
        const answer = await commitHeld(request, reply, held, payload, () => (kept = true))
        return answer
      } finally {
        await (kept ? held.place.kept() : held.place.returned())
      }
    }

    /** commitAnswer's work; `keep()` when this request's answer (hence its key) is, or may be, kept. */
    async function commitHeld(request: FastifyRequest, reply: FastifyReply, held: HeldKey, payload: unknown, keep: () => void): Promise<unknown> {
      const status = reply.statusCode
      if (status >= 500) {
        // Not waited for: a handler past HANDLER_TIMEOUT may still hold the connection, and its
        // statement may wait on a lock; the key stays taken (409) until the rollback is done.
        void rollBack(request, held.trx)
        return payload
      }
      if (typeof payload !== 'string' && payload != null) {
        await rollBack(request, held.trx)
        throw new Error(`${held.route}: an Idempotency-Key route answered a body that is not text; nothing was committed`)
      }
      if (held.successOnly && status >= 300) {
        await rollBack(request, held.trx)
        return (await answerCommittedMeanwhile(request, reply, held)) ?? payload
      }
      const contentType = reply.getHeader('content-type')
      const location = reply.getHeader('location')
      const sealed = sealAnswer(held.key, held.scope, held.route, {
        contentType: contentType === undefined ? undefined : String(contentType),
        location: location === undefined ? undefined : String(location),
        body: payload ?? '',
      })
      let inserted: boolean
      try {
        inserted = await insertAnswer(held.trx, held, status, sealed)
      } catch (error) {
        await rollBack(request, held.trx)
        return unavailable(request, reply, error, DETAILS.notDone)
      }
      if (!inserted) {
        // Another request with this key committed between this one's lock statement and now: its answer stands.
        await rollBack(request, held.trx)
        return (await answerCommittedMeanwhile(request, reply, held)) ?? unavailable(request, reply, 'the kept answer vanished', DETAILS.notDone)
      }
      try {
        await held.trx.commit().execute()
        keep()
        return payload
      } catch (error) {
        // Kysely releases the connection on rollback only.
        await rollBack(request, held.trx)
        // Committed on the primary, not confirmed by its synchronous standby: kept, but not durable.
        if (error instanceof CommitNotReplicated) {
          keep()
          return unavailable(request, reply, error, DETAILS.notReplicated)
        }
        // The server refused the COMMIT: nothing was committed. A lost connection: find out.
        if (!isDatabaseUnavailable(error)) return unavailable(request, reply, error, DETAILS.notDone)
        const outcome = await outcomeOfLostCommit(app.db, held)
        request.log.warn({ err: error, outcome: outcome.kind }, 'idempotency: the COMMIT got no answer')
        if (outcome.kind === 'not_committed') return unavailable(request, reply, error, DETAILS.notDone)
        // May have been kept: counted, so that the quota never undercounts the table.
        keep()
        if (outcome.kind === 'unknown') return unavailable(request, reply, error, DETAILS.unknown)
        // Its own answer (the sealed bytes carry a random IV), or the one a retry committed after it.
        return sealed.equals(Buffer.from(outcome.row.answer)) ? payload : keptAnswer(request, reply, held, outcome.row)
      }
    }

    /** The net: a transaction no answer ended (a reply never sent) must not keep its connection. */
    async function endAbandoned(request: FastifyRequest): Promise<void> {
      const held = request.idempotency
      if (!held) return
      request.idempotency = null
      request.transaction = null
      request.log.error({ route: held.route }, 'idempotency: a keyed request ended without its answer; rolled back')
      await Promise.all([rollBack(request, held.trx), held.place.returned()])
    }

    app.decorate('idempotencyHooks', { takeKey, commitAnswer, endAbandoned })
  },
  { name: 'idempotency', dependencies: ['database', 'tenancy', 'metrics'] },
)

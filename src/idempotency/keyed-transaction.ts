import type { FastifyReply, FastifyRequest, FastifySchema } from 'fastify'
import type { ControlledTransaction } from 'kysely'
import { CommitNotReplicated, isDatabaseUnavailable } from '../db/errors.js'
import { problem } from '../lib/problem.js'
import type { Database } from '../../db/types.js'
import { DETAILS, keptAnswer, problemText, throttledKeys, type KeyedRequest } from './answers.js'
import { outcomeOfLostCommit } from './commit.js'
import { canonicalJson, fingerprint, keyHash, sealAnswer, sha256 } from './key.js'
import type { KeyQuota, QuotaPlace } from './quota.js'
import { findKey, insertAnswer, lockKey } from './repository.js'

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
  interface FastifyInstance {
    /** New Idempotency-Keys per caller and window (./quota.ts), taken by a keyed transaction's claim. */
    keyQuota: KeyQuota
  }
}

const HEADER = 'idempotency-key'

/** A keyed route declares the header in its schema (schemas/idempotency.ts), so the document shows it. */
export function requireKeyHeader(url: string, schema: FastifySchema | undefined): void {
  const headers = (schema?.headers ?? {}) as { properties?: Record<string, unknown> }
  if (!Object.keys(headers.properties ?? {}).some((name) => name.toLowerCase() === HEADER)) {
    throw new Error(`${url}: an idempotency route must declare the ${HEADER} header in its schema (schemas/idempotency.ts)`)
  }
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

/** Ends a transaction that commits nothing; a failure only means the connection is gone, which ends it too. */
const rollBack = (request: FastifyRequest, trx: ControlledTransaction<Database>): Promise<void> =>
  trx
    .rollback()
    .execute()
    .catch((error: unknown) => request.log.warn({ err: error }, 'idempotency: rollback failed'))

/**
 * `Idempotency-Key` (docs/retries.md): a keyed request runs in one transaction that takes the key's
 * lock, runs the route on it (`db`), and INSERTs the answer before its COMMIT, which happens before
 * a byte of the answer is sent. The work and its kept answer commit together or not at all, so there
 * is never a key claimed without its answer, and a request that dies leaves nothing. The route
 * constructs (src/tenancy/routes.ts) call its steps: `claim` in preHandler (after admission),
 * `commit` in onSend, `abandon` in onResponse for a transaction no answer ended.
 */
export class KeyedTransaction {
  private ended = false

  private constructor(
    private readonly request: FastifyRequest,
    private readonly held: KeyedRequest,
    /** The transaction the route's work runs on, and its answer commits in. */
    readonly db: ControlledTransaction<Database>,
    /** Its place in the caller's quota of keys: counted once the answer is kept, else given back. */
    private readonly place: QuotaPlace,
  ) {}

  /**
   * Takes the key and opens the request's transaction; undefined without a key; a replay of the
   * kept answer (the reply, sent); or a refusal thrown: 409 in use, 422 reused, 429 the quota.
   */
  static async claim(request: FastifyRequest, reply: FastifyReply): Promise<KeyedTransaction | FastifyReply | undefined> {
    const key = request.headers[HEADER]
    if (typeof key !== 'string') return undefined
    const keyed = keyedRequest(request, key)
    const trx = await request.server.db.startTransaction().execute()
    let locked: Awaited<ReturnType<typeof lockKey>>
    try {
      locked = await lockKey(trx, keyed)
    } catch (error) {
      await rollBack(request, trx)
      throw error
    }
    if (locked.locked && !locked.row) {
      // Only a new key counts against the caller's quota: a replay or a refusal stores nothing.
      const taken = await request.server.keyQuota.take(keyed.scope)
      if (!taken.granted) {
        void rollBack(request, trx)
        throw throttledKeys(taken.waitMs)
      }
      return new KeyedTransaction(request, keyed, trx, taken.place)
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

  /** Writes the answer and commits it with the work, before the client gets a byte; a 5xx commits nothing. */
  async commit(reply: FastifyReply, payload: unknown): Promise<unknown> {
    if (this.ended) return payload
    this.ended = true
    let kept = false
    try {
      return await this.commitAnswer(reply, payload, () => (kept = true))
    } finally {
      await (kept ? this.place.kept() : this.place.returned())
    }
  }

  /** The net: a transaction no answer ended (a reply never sent) must not keep its connection. */
  async abandon(): Promise<void> {
    if (this.ended) return
    this.ended = true
    this.request.log.error({ route: this.held.route }, 'idempotency: a keyed request ended without its answer; rolled back')
    await Promise.all([rollBack(this.request, this.db), this.place.returned()])
  }

  /** commit's work; `keep()` when this request's answer (hence its key) is, or may be, kept. */
  private async commitAnswer(reply: FastifyReply, payload: unknown, keep: () => void): Promise<unknown> {
    const { request, held } = this
    const status = reply.statusCode
    if (status >= 500) {
      // Not waited for: a handler past HANDLER_TIMEOUT may still hold the connection, and its
      // statement may wait on a lock; the key stays taken (409) until the rollback is done.
      void rollBack(request, this.db)
      return payload
    }
    if (typeof payload !== 'string' && payload != null) {
      await rollBack(request, this.db)
      throw new Error(`${held.route}: an Idempotency-Key route answered a body that is not text; nothing was committed`)
    }
    if (held.successOnly && status >= 300) {
      await rollBack(request, this.db)
      return (await this.answerCommittedMeanwhile(reply)) ?? payload
    }
    const sealed = this.seal(reply, payload ?? '')
    let inserted: boolean
    try {
      inserted = await insertAnswer(this.db, held, status, sealed)
    } catch (error) {
      await rollBack(request, this.db)
      return this.unavailable(reply, error, DETAILS.notDone)
    }
    if (!inserted) {
      // Another request with this key committed between this one's lock statement and now: its answer stands.
      await rollBack(request, this.db)
      return (await this.answerCommittedMeanwhile(reply)) ?? this.unavailable(reply, 'the kept answer vanished', DETAILS.notDone)
    }
    return this.commitWithAnswer(reply, payload, sealed, keep)
  }

  /** The COMMIT of the work with its answer, and what to answer when it fails or gets no answer. */
  private async commitWithAnswer(reply: FastifyReply, payload: unknown, sealed: Buffer, keep: () => void): Promise<unknown> {
    const { request, held } = this
    try {
      await this.db.commit().execute()
      keep()
      return payload
    } catch (error) {
      // Kysely releases the connection on rollback only.
      await rollBack(request, this.db)
      // Committed on the primary, not confirmed by its synchronous standby: kept, but not durable.
      if (error instanceof CommitNotReplicated) {
        keep()
        return this.unavailable(reply, error, DETAILS.notReplicated)
      }
      // The server refused the COMMIT: nothing was committed. A lost connection: find out.
      if (!isDatabaseUnavailable(error)) return this.unavailable(reply, error, DETAILS.notDone)
      const outcome = await outcomeOfLostCommit(request.server.db, held)
      request.log.warn({ err: error, outcome: outcome.kind }, 'idempotency: the COMMIT got no answer')
      if (outcome.kind === 'not_committed') return this.unavailable(reply, error, DETAILS.notDone)
      // May have been kept: counted, so that the quota never undercounts the table.
      keep()
      if (outcome.kind === 'unknown') return this.unavailable(reply, error, DETAILS.unknown)
      // Its own answer (the sealed bytes carry a random IV), or the one a retry committed after it.
      return sealed.equals(Buffer.from(outcome.row.answer)) ? payload : await keptAnswer(request, reply, held, outcome.row)
    }
  }

  /** The answer as a retry will replay it, sealed under the client's key. */
  private seal(reply: FastifyReply, body: string): Buffer {
    const contentType = reply.getHeader('content-type')
    const location = reply.getHeader('location')
    return sealAnswer(this.held.key, this.held.scope, this.held.route, {
      contentType: contentType === undefined ? undefined : String(contentType),
      location: location === undefined ? undefined : String(location),
      body,
    })
  }

  /**
   * After the transaction ended without this request's answer: another request's, if one committed
   * meanwhile; undefined when none did, or when the database cannot say (the caller's answer then
   * stands: this request's own work was rolled back either way).
   */
  private async answerCommittedMeanwhile(reply: FastifyReply): Promise<string | undefined> {
    try {
      const row = await findKey(this.request.server.db, this.held)
      return row && (await keptAnswer(this.request, reply, this.held, row))
    } catch (error) {
      this.request.log.warn({ err: error }, 'idempotency: the key could not be read again')
      return undefined
    }
  }

  private unavailable(reply: FastifyReply, error: unknown, detail: string): string {
    this.request.log.warn({ err: error }, 'idempotency: the answer could not be committed')
    this.request.server.metrics.unavailableResponses.labels('database').inc()
    reply.header('retry-after', '5')
    return problemText(this.request, reply, 503, 'service_unavailable', detail)
  }
}

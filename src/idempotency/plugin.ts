import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { problem } from '../lib/problem.js'
import { canonicalJson, fingerprint, keyHash, openAnswer, sealAnswer, sha256 } from './key.js'
import { claimKey, findKey, releaseKey, storeAnswer, takeOverKey, type Claim, type KeyRow } from './repository.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route honours `Idempotency-Key` (src/idempotency/); its schema declares the header (schemas/idempotency.ts). */
    idempotency?: boolean
  }
  interface FastifyRequest {
    /** The key this request holds, until its answer is kept. */
    idempotency: HeldKey | null
  }
}

interface HeldKey extends Claim {
  key: string
  /** On a public route only a success is kept: a request that fails its link reserves nothing. */
  successOnly: boolean
}

export interface IdempotencyOptions {
  /** A claim still unanswered after this long is taken to have died with its instance. */
  claimTimeoutMs: number
}

const HEADER = 'idempotency-key'
export const REPLAYED_HEADER = 'idempotent-replayed'

const inUse = () =>
  problem(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry shortly.', {
    headers: { 'retry-after': '1' },
  })

const reused = () => problem(422, 'idempotency_key_reused', 'This Idempotency-Key was already used with another request; use a new key.')

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

function heldKey(request: FastifyRequest, key: string): HeldKey {
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

function replay(request: FastifyRequest, reply: FastifyReply, held: HeldKey, row: KeyRow & { status: number; answer: Uint8Array }): FastifyReply {
  const answer = openAnswer(held.key, held.scope, held.route, row.answer)
  if (row.status >= 400) request.problemCode = (JSON.parse(answer.body) as { code?: string }).code ?? null
  reply.code(row.status).header(REPLAYED_HEADER, 'true')
  if (answer.location) reply.header('location', answer.location)
  if (answer.contentType) reply.header('content-type', answer.contentType)
  return reply.send(answer.body)
}

const isAnswered = (row: KeyRow): row is KeyRow & { status: number; answer: Uint8Array } => row.status !== null && row.answer !== null

export default fp(
  async function idempotencyPlugin(app: FastifyInstance, { claimTimeoutMs }: IdempotencyOptions) {
    app.decorateRequest('idempotency', null)

    /** Runs the request (the key is now its own), replays the first answer, or refuses: 422, 409. */
    async function claimOrReplay(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
      const key = request.headers[HEADER]
      if (typeof key !== 'string') return undefined
      const held = heldKey(request, key)
      if (await claimKey(app.db, held)) {
        request.idempotency = held
        return undefined
      }
      const row = await findKey(app.db, held, claimTimeoutMs)
      // Gone since the claim failed (given back after a 5xx, or deleted by retention): one more try.
      if (!row) return claimKey(app.db, held).then((claimed) => run(request, held, claimed))
      if (row.expired) return run(request, held, await takeOverKey(app.db, held, claimTimeoutMs))
      if (!held.fingerprint.equals(Buffer.from(row.fingerprint))) throw reused()
      if (isAnswered(row)) return replay(request, reply, held, row)
      if (row.abandoned) return run(request, held, await takeOverKey(app.db, held, claimTimeoutMs))
      throw inUse()
    }

    function run(request: FastifyRequest, held: HeldKey, claimed: boolean): undefined {
      if (!claimed) throw inUse()
      request.idempotency = held
      return undefined
    }

    /** Keeps the answer for the retries before the client has it; a 5xx gives the key back. */
    async function keepAnswer(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
      const held = request.idempotency
      if (!held) return payload
      request.idempotency = null
      const status = reply.statusCode
      try {
        if (status >= 500 || (held.successOnly && status >= 400) || (typeof payload !== 'string' && payload != null)) {
          // A handler past HANDLER_TIMEOUT may still finish: its claim stays until claimTimeoutMs, never run twice meanwhile.
          if ((request.signal.reason as { code?: string } | undefined)?.code !== 'FST_ERR_HANDLER_TIMEOUT') await releaseKey(app.db, held)
          return payload
        }
        const contentType = reply.getHeader('content-type')
        const location = reply.getHeader('location')
        const answer = sealAnswer(held.key, held.scope, held.route, {
          contentType: contentType === undefined ? undefined : String(contentType),
          location: location === undefined ? undefined : String(location),
          body: typeof payload === 'string' ? payload : '',
        })
        await storeAnswer(app.db, held, status, answer)
      } catch (error) {
        // The client gets its answer all the same; a retry meets the claim (409) until claimTimeoutMs.
        request.log.warn({ err: error }, 'idempotency: the key could not be updated')
      }
      return payload
    }

    app.addHook('onRoute', (route: RouteOptions) => {
      if (!route.config?.idempotency) return
      const headers = (route.schema?.headers ?? {}) as { properties?: Record<string, unknown> }
      if (!Object.keys(headers.properties ?? {}).some((name) => name.toLowerCase() === HEADER)) {
        throw new Error(`${route.url}: an idempotency route must declare the ${HEADER} header in its schema (schemas/idempotency.ts)`)
      }
      const preHandler = route.preHandler ?? []
      route.preHandler = [...(Array.isArray(preHandler) ? preHandler : [preHandler]), claimOrReplay]
      const onSend = route.onSend ?? []
      route.onSend = [...(Array.isArray(onSend) ? onSend : [onSend]), keepAnswer]
    })
  },
  { name: 'idempotency', dependencies: ['database', 'tenancy'] },
)

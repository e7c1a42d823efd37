import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { FairnessSettings, RateClass } from '../config.js'
import { problem } from '../lib/problem.js'
import { routeFairness, type Priority, type RouteFairness } from './classes.js'
import { rateLimitField, rateLimitPolicyField, type QuotaState } from './headers.js'
import { InFlightLimits, KnownMembers, RateLimits, RefusalHolds, RefusedAddresses, type Subject } from './limits.js'
import { FairnessMetrics } from './metrics.js'
import { LoadShedder } from './shedder.js'
import { FallbackWindowStore, MemoryWindowStore, RedisWindowStore, type WindowStore } from './window-store.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by this plugin on every route (src/fairness/classes.ts). */
    fairness?: RouteFairness
    /** A route's own shedding priority: `large-read` for a read of many rows. */
    priority?: Priority
  }
  interface FastifyInstance {
    /** Undefined when LOAD_SHED=off. */
    loadShedder: LoadShedder | undefined
  }
}

export interface FairnessOptions {
  settings: FairnessSettings
  /** The instance's Redis (REDIS_URL): the quotas are the fleet's; without it, this instance's. */
  redis: Redis | undefined
  poolWaiting: () => number
  /** A secret every instance shares (the signing key): the fleet's counters are named after a hash of it, a new key starts them afresh. */
  fleetSecret: string
  /** Whether the event loop's delay is the instance's load (not on the embedded database). */
  watchEventLoop: boolean
  /** The key a client address is counted under (src/lib/client-address.ts: an IPv6 /64 is one client). */
  addressKey: (address: string) => string
}

const rateLimited = (waitMs: number, detail: string) => {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  return problem(429, 'rate_limited', `${detail} Retry in ${retryAfter} seconds.`, { headers: { 'retry-after': String(retryAfter) } })
}

function windowStore(app: FastifyInstance, redis: Redis | undefined, fleetSecret: string): WindowStore {
  if (!redis) return new MemoryWindowStore()
  const fleet = createHash('sha256').update(`rate-limits:${fleetSecret}`).digest('hex').slice(0, 12)
  return new FallbackWindowStore(new RedisWindowStore(redis, `rate:${fleet}:`), new MemoryWindowStore(), (error) =>
    app.log.warn({ err: error }, "rate limits: redis failed, using this instance's counts"),
  )
}

function sendQuotas(reply: FastifyReply, states: QuotaState[]): void {
  reply.header('ratelimit-policy', rateLimitPolicyField(states))
  reply.header('ratelimit', rateLimitField(states))
}

/**
 * Fair under load (docs/api.md "Limits"): before any database work, a saturated instance sheds
 * the least critical requests (503); a request's principal (the token's user, and a company role
 * it was admitted to before) or, on a public route, its address is held to its class's quota per
 * window (429 rate_limited) and to its requests at once; an address that keeps sending 401s is
 * refused before its tokens are verified.
 */
async function fairnessPlugin(app: FastifyInstance, { settings, redis, poolWaiting, fleetSecret, watchEventLoop, addressKey }: FairnessOptions) {
  const rates = new RateLimits(windowStore(app, redis, fleetSecret), settings)
  const inFlight = new InFlightLimits()
  const members = new KnownMembers()
  const refused = new RefusedAddresses()
  const holds = new RefusalHolds()
  /** What a request holds until its answer ends (its place in flight, its places at once): each let go once. */
  const holdings = new WeakMap<FastifyRequest, (() => void)[]>()
  const shedder = settings.shed && new LoadShedder(settings.shed, poolWaiting, watchEventLoop)
  app.decorate('loadShedder', shedder)
  if (shedder) app.addHook('onClose', async () => shedder.stop())
  const metrics = new FairnessMetrics(app.metrics.registry, settings.windowSeconds, () => ({
    active: shedder?.shedding ?? false,
    share: shedder?.pressure().share ?? 0,
  }))

  app.addHook('onRoute', (route) => {
    const config = (route.config ?? {}) as NonNullable<typeof route.config>
    const authenticated = config.tenancy !== undefined
    route.config = { ...config, fairness: routeFairness({ url: route.url, method: route.method, authenticated, priority: config.priority }) }
  })

  /** Lets go at once of what the request holds: it is being refused or shed. */
  function letGo(request: FastifyRequest): void {
    for (const release of holdings.get(request) ?? []) release()
  }

  function holdUntilAnswered(request: FastifyRequest, reply: FastifyReply, release: () => void): void {
    let released = false
    const once = () => {
      if (released) return
      released = true
      release()
    }
    const list = holdings.get(request)
    if (list) list.push(once)
    else holdings.set(request, [once])
    reply.raw.once('close', once)
  }

  /**
   * The 429, after letting go of what the request holds; held back for a caller still inside its
   * last refusal's wait (RefusalHolds), its Retry-After then what is left of that wait.
   */
  async function refuse(request: FastifyRequest, reply: FastifyReply, caller: string, waitMs: number, detail: string): Promise<never> {
    letGo(request)
    const holdMs = holds.holdMs(caller, waitMs, performance.now() - reply.elapsedTime)
    if (holdMs > 0) {
      metrics.held.inc()
      await sleep(holdMs)
    }
    throw rateLimited(waitMs - holdMs, detail)
  }

  /** Takes places at once on `keys` until the answer ends (its connection's close included), or refuses. */
  async function holdPlaces(request: FastifyRequest, reply: FastifyReply, rateClass: RateClass, keys: string[]): Promise<void> {
    if (inFlight.enter(keys, settings.concurrencyLimits[rateClass]) !== undefined) {
      metrics.limited.labels(rateClass, 'concurrency').inc()
      await refuse(request, reply, `concurrency:${keys[0]!}`, 1000, 'Too many requests at once for this caller.')
    }
    holdUntilAnswered(request, reply, () => inFlight.leave(keys))
  }

  async function chargeQuotas(
    request: FastifyRequest,
    reply: FastifyReply,
    rateClass: RateClass,
    subjects: Subject[],
    principal: string,
  ): Promise<void> {
    const { states, refusedMs } = await rates.charge(rateClass, subjects)
    sendQuotas(reply, states)
    if (refusedMs === 0) return
    metrics.limited.labels(rateClass, 'rate').inc()
    metrics.principalRefused(principal)
    await refuse(request, reply, `rate:${subjects[0]!.key}`, refusedMs, 'Too many requests for this caller in this window.')
  }

  /**
   * After the caller's own limits, so that a caller beyond them is refused (429, held back if it
   * loops) rather than shed, and its excess does not count as the instance's load.
   */
  function shed(request: FastifyRequest, reply: FastifyReply, fairness: RouteFairness): void {
    if (!shedder) return
    const reason = shedder.admit(fairness.priority)
    if (reason !== undefined) {
      letGo(request)
      metrics.shed.labels(fairness.rateClass ?? 'none', fairness.priority, reason).inc()
      throw problem(503, 'service_unavailable', 'This instance is saturated and sheds less critical requests; retry shortly.', {
        headers: { 'retry-after': '1' },
      })
    }
    holdUntilAnswered(request, reply, () => shedder.ended())
  }

  /** Admitted: when every database connection is taken, it waits its caller's turn (src/db/fair-gate.ts). */
  function waitsAs(request: FastifyRequest, caller: string): void {
    if (request.writes) request.writes.caller = caller
  }

  app.addHook('onRequest', async (request, reply) => {
    const fairness = request.routeOptions.config.fairness
    if (!fairness) return
    if (!fairness.rateClass) return shed(request, reply, fairness)
    const address = addressKey(request.ip)
    if (fairness.key === 'principal') {
      const waitMs = refused.refusedMs(address)
      if (waitMs === 0) return
      metrics.limited.labels(fairness.rateClass, 'address').inc()
      await refuse(request, reply, `rejected:${address}`, waitMs, 'Too many unauthenticated requests from this address.')
    }
    await holdPlaces(request, reply, fairness.rateClass, [`${fairness.rateClass}:address:${address}`])
    await chargeQuotas(request, reply, fairness.rateClass, [{ name: fairness.rateClass, key: `${fairness.rateClass}:address:${address}` }], address)
    shed(request, reply, fairness)
    waitsAs(request, `address:${address}`)
  })

  // After every onRequest hook, the route's token check among them: the principal is known, nothing read yet.
  app.addHook('preParsing', async (request, reply) => {
    const fairness = request.routeOptions.config.fairness
    if (fairness?.key !== 'principal' || !fairness.rateClass || !request.tokenClaims) return
    const userId = request.tokenClaims.user_id
    const subjects: Subject[] = [{ name: fairness.rateClass, key: `${fairness.rateClass}:user:${userId}` }]
    const roleId = (request.params as { company_role_id?: string }).company_role_id
    if (roleId !== undefined && members.isMember(userId, roleId)) {
      subjects.push({ name: `${fairness.rateClass}-company-role`, key: `${fairness.rateClass}:role:${roleId}` })
    }
    await holdPlaces(
      request,
      reply,
      fairness.rateClass,
      subjects.map(({ key }) => key),
    )
    await chargeQuotas(request, reply, fairness.rateClass, subjects, `user:${userId}`)
    shed(request, reply, fairness)
    waitsAs(request, `user:${userId}`)
  })

  app.addHook('onResponse', async (request, reply) => {
    const fairness = request.routeOptions.config.fairness
    if (fairness?.key !== 'principal') return
    if (request.companyRole && request.auth) members.remember(request.auth.user.id, request.companyRole.companyRoleId)
    if (reply.statusCode !== 401) return
    const address = addressKey(request.ip)
    try {
      const { refusedMs } = await rates.charge('rejected', [{ name: 'rejected', key: `rejected:address:${address}` }])
      if (refusedMs > 0) refused.refuse(address, refusedMs)
    } catch (error) {
      request.log.warn({ err: error }, 'rate limits: a 401 could not be counted')
    }
  })
}

export default fp(fairnessPlugin, { name: 'fairness', dependencies: ['metrics'] })

import type { Static, TSchema } from '@sinclair/typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type {
  ContextConfigDefault,
  FastifyInstance,
  FastifyContextConfig,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  HTTPMethods,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteOptions,
  RouteShorthandOptions,
} from 'fastify'
import type { ResolveFastifyReplyReturnType } from 'fastify/types/type-provider.js'
import type { Db } from '../../db/types.js'
import { KeyedTransaction, requireKeyHeader } from '../idempotency/keyed-transaction.js'
import { problem } from '../lib/problem.js'
import { authenticate } from '../tokens/authentication.js'
import { readsOf } from './replica-reads.js'
import { admitMember, admitUser, principalKey, scopedPrincipalKey } from './admission.js'
import type { CompanyRoleContext, RoleRequirement } from './membership.js'
import { findActiveUserForToken, findUserWithMembership, type AuthenticatedUser } from './principal.js'
import { PrincipalStatement, ScopedStatement, type CompanyRead, type UserRead } from './scoped-statement.js'

/** How a route is admitted, listed by the registry (src/tenancy/plugin.ts); set only by the constructs below. */
export type TenancyDeclaration =
  | { kind: 'user'; statement?: PrincipalStatement<object, unknown> }
  | { kind: 'company'; requirement: RoleRequirement; statement?: ScopedStatement<object, unknown> }

type Request<S extends FastifySchema> = FastifyRequest<RouteGenericInterface, RawServerDefault, RawRequestDefaultExpression, S, TypeBoxTypeProvider>
type Reply<S extends FastifySchema> = FastifyReply<
  RouteGenericInterface,
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  ContextConfigDefault,
  S,
  TypeBoxTypeProvider
>
type Returns<S extends FastifySchema> = ResolveFastifyReplyReturnType<TypeBoxTypeProvider, S, RouteGenericInterface>
type ParamsOf<S> = S extends { params: infer P extends TSchema } ? Static<P> : object

/** Everything else a route may say (hooks, body limit, other config keys such as a plugin's flag), passed through as written. */
type RouteParts<S extends FastifySchema> = Omit<
  RouteShorthandOptions<
    RawServerDefault,
    RawRequestDefaultExpression,
    RawReplyDefaultExpression,
    RouteGenericInterface,
    ContextConfigDefault,
    S,
    TypeBoxTypeProvider
  >,
  'schema' | 'config'
> & {
  method: HTTPMethods
  url: string
  schema: S
  config?: Omit<FastifyContextConfig, 'tenancy' | 'public'>
}

/**
 * What a company route's handler is given: the admitted member, their user, the read's data row,
 * and the database to work on (a keyed request's transaction, else the app's: `keyHooks` below
 * decides; a handler never uses `app.db`, so that its work commits with its kept answer). Without
 * a read, `data` is undefined.
 */
export interface CompanyTenancy<Data> {
  companyRole: CompanyRoleContext
  user: AuthenticatedUser
  data: Data
  db: Db
}

export interface UserTenancy<Data> {
  user: AuthenticatedUser
  data: Data[]
  db: Db
}

/** Who answers a read that found no row: the pipeline with a 404 (the default), or the handler (its checks come first). */
type NotFound = '404' | 'handler'
type Found<Data, Missing extends NotFound> = Missing extends 'handler' ? Data | undefined : Data

export type CompanyRouteSpec<S extends FastifySchema, Data, Missing extends NotFound> = RouteParts<S> &
  RoleRequirement & {
    /**
     * A data query: run in one statement with the principal and membership, gated on the membership,
     * a write's included (the row it would otherwise read again). Nothing found: 404 `not_found`,
     * unless `notFound: 'handler'`.
     */
    read?: CompanyRead<ParamsOf<S>, Data>
    notFound?: Missing
    handler: (request: Request<S>, reply: Reply<S>, tenancy: CompanyTenancy<Found<Data, Missing>>) => Returns<S>
  }

export type UserRouteSpec<S extends FastifySchema, Data> = RouteParts<S> & {
  /** A read's data query, run in one statement with the token's principal; its rows ordered by `orderBy`. */
  read?: UserRead<ParamsOf<S>, Data>
  orderBy?: readonly (keyof Data & string)[]
  handler: (request: Request<S>, reply: Reply<S>, tenancy: UserTenancy<Data>) => Returns<S>
}

export type PublicRouteSpec<S extends FastifySchema> = RouteParts<S> & {
  handler: (this: FastifyInstance, request: Request<S>, reply: Reply<S>, route: { db: Db }) => Returns<S>
}

type TypeboxRoute = RouteOptions<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  FastifySchema,
  TypeBoxTypeProvider
>

type Hook = (request: FastifyRequest, reply: FastifyReply, ...rest: never[]) => unknown
/** A route's own hooks of one kind, as Fastify takes them (one, a list, or none). */
const own = (hooks: unknown): Hook[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks as Hook])

const notFound = () => problem(404, 'not_found', 'Not found.')

/**
 * The net: an authenticated route's success that nobody admitted (or, on a company route, whose
 * member nobody admitted) is a bug and must not reach the client. onSend, not preSerialization: a
 * body sent as JSON text (route 9) skips serialisation and its hooks.
 */
async function assertAdmitted(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (reply.statusCode >= 400) return payload
  if (!request.auth) throw new Error('a route answered without admitting the principal')
  if (request.routeOptions.config.tenancy?.kind === 'company' && !request.companyRole) {
    throw new Error('a company-scoped route answered without admitting the member')
  }
  return payload
}

/**
 * Chat presence (§4 route 6): every request admitted for a company role marks that role seen. A
 * side write after the answer is sent, bounded (./presence.ts), a failure only logged and counted,
 * so that a slow or locked presence table never changes an answer nor holds its connection.
 */
async function markSeen(request: FastifyRequest): Promise<void> {
  if (!request.companyRole) return
  try {
    await request.server.presence.markSeen(request.companyRole.companyRoleId)
  } catch (error) {
    request.log.warn({ err: error }, 'presence: the role could not be marked seen')
    request.server.metrics.sideWriteFailures.labels('presence').inc()
  }
}

/**
 * A keyed route's steps (`config.idempotency`, src/idempotency/keyed-transaction.ts), empty for any
 * other: the key claimed in preHandler (after admission), the answer committed with the work in
 * onSend, a transaction no answer ended rolled back in onResponse; `dbOf` is the database its
 * handler works on, the keyed transaction while it holds one, else the app's.
 */
function keyHooks(route: { url: string; schema: FastifySchema; config?: { idempotency?: boolean } }) {
  const held = new WeakMap<FastifyRequest, KeyedTransaction>()
  const dbOf = (request: FastifyRequest): Db => held.get(request)?.db ?? request.server.db
  if (!route.config?.idempotency) return { preHandler: [], onSend: [], onResponse: [], dbOf }
  requireKeyHeader(route.url, route.schema)
  async function claimKey(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const claimed = await KeyedTransaction.claim(request, reply)
    if (!(claimed instanceof KeyedTransaction)) return claimed
    held.set(request, claimed)
    return undefined
  }
  async function commitKey(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const transaction = held.get(request)
    if (!transaction) return payload
    held.delete(request)
    return transaction.commit(reply, payload)
  }
  async function abandonKey(request: FastifyRequest): Promise<void> {
    const transaction = held.get(request)
    held.delete(request)
    await transaction?.abandon()
  }
  return { preHandler: [claimKey], onSend: [commitKey], onResponse: [abandonKey], dbOf }
}

type KeyHooks = ReturnType<typeof keyHooks>

/**
 * The hooks of an authenticated route (companyRoute, userRoute), in their order: the token, then
 * the route's own; admission, the route's own, the key; the route's own, the net, the keyed commit,
 * a write's WAL position; the route's own, the keyed net, then `after`.
 */
function authenticatedHooks(
  spec: { onRequest?: unknown; preHandler?: unknown; onSend?: unknown; onResponse?: unknown },
  steps: { admit: Hook; keyed: KeyHooks; reads: ReturnType<typeof readsOf>; after?: Hook[] },
) {
  const { admit, keyed, reads, after = [] } = steps
  return {
    onRequest: [authenticate, ...own(spec.onRequest)],
    preHandler: [admit, ...own(spec.preHandler), ...keyed.preHandler],
    onSend: [...own(spec.onSend), assertAdmitted, ...keyed.onSend, ...reads.onSend],
    onResponse: [...own(spec.onResponse), ...keyed.onResponse, ...after],
  }
}

/**
 * A route acting for `{company_role_id}` (§3), the only way to declare one (the pipeline refuses to
 * start with any other). Its whole way, in order:
 * 1. onRequest: the bearer token's signature and claims (401), then the route's own hooks;
 * 2. the body's parsing and the route's own preValidation, then its schema (400);
 * 3. preHandler: admission in one statement (principal 401, membership 404, role kind 403
 *    `wrong_role`, permission 403), with the read's data row (404 when none, by default); then
 *    the route's own preHandler; then, on a keyed route, the Idempotency-Key (409, 422, a replay);
 * 4. the handler, given the member and the data;
 * 5. onSend: the net (no success unadmitted), then a keyed route's answer committed with its work,
 *    then a write's WAL position kept for its user's next reads (read-your-writes);
 * 6. onResponse: a keyed transaction left open is rolled back; the member's role is marked seen.
 */
export function companyRoute<const S extends FastifySchema, Data = undefined, const Missing extends NotFound = '404'>(
  spec: CompanyRouteSpec<S, Data, Missing>,
): TypeboxRoute {
  const { role, permission, read, notFound: whenNone, handler, config, onRequest, preHandler, onSend, onResponse, ...route } = spec
  const ownHooks = { onRequest, preHandler, onSend, onResponse }
  const requirement: RoleRequirement = role ? { role, permission } : { permission }
  const statement = read && new ScopedStatement(read as CompanyRead<object, Data>)
  const tenancy: TenancyDeclaration = {
    kind: 'company',
    requirement,
    ...(statement ? { statement: statement as ScopedStatement<object, unknown> } : {}),
  }
  const keyed = keyHooks(spec)
  const reads = readsOf(spec.method)
  // The admitted request's data row, for its handler: typed here, never on the request.
  const found = new WeakMap<FastifyRequest, Data>()

  async function admit(request: FastifyRequest): Promise<void> {
    const key = scopedPrincipalKey(request)
    if (!statement) return void admitMember(request, await findUserWithMembership(request.server.db, key), requirement)
    // Where it runs, and why: ./replica-reads.ts (a replica's refusal is confirmed on the primary).
    const run = (db: Db) => statement.run(db, key, request.params as object)
    const { principal, data } = await reads.run(request, run, (found) => found.principal?.membership !== undefined)
    admitMember(request, principal, requirement)
    if (data !== undefined) found.set(request, data)
    else if (whenNone !== 'handler') throw notFound()
  }

  return {
    ...route,
    config: { ...config, tenancy },
    ...authenticatedHooks(ownHooks, { admit, keyed, reads, after: [markSeen] }),
    handler(request: FastifyRequest, reply: FastifyReply) {
      const { auth, companyRole } = request
      if (!auth || !companyRole) throw new Error(`${spec.url} reached its handler without admission`)
      const data = found.get(request) as Found<Data, Missing>
      return handler(request as Request<S>, reply as Reply<S>, { companyRole, user: auth.user, data, db: keyed.dbOf(request) })
    },
  } as unknown as TypeboxRoute
}

/**
 * An authenticated route of the token's user alone (route 4). Its way: the bearer token (401),
 * parsing and validation (400), admission of the active user with the read's rows in one
 * statement (401), a keyed route's Idempotency-Key, the handler, the net, a keyed answer's commit,
 * a write's WAL position.
 */
export function userRoute<const S extends FastifySchema, Data = never>(spec: UserRouteSpec<S, Data>): TypeboxRoute {
  const { read, orderBy, handler, config, onRequest, preHandler, onSend, onResponse, ...route } = spec
  const ownHooks = { onRequest, preHandler, onSend, onResponse }
  const statement = read && new PrincipalStatement(read as UserRead<object, Data>, orderBy)
  const tenancy: TenancyDeclaration = { kind: 'user', ...(statement ? { statement: statement as PrincipalStatement<object, unknown> } : {}) }
  const keyed = keyHooks(spec)
  const reads = readsOf(spec.method)
  const found = new WeakMap<FastifyRequest, Data[]>()

  async function admit(request: FastifyRequest): Promise<void> {
    const key = principalKey(request)
    if (!statement) return void admitUser(request, await findActiveUserForToken(request.server.db, key))
    const run = (db: Db) => statement.run(db, key, request.params as object)
    const { user, data } = await reads.run(request, run, (found) => found.user !== undefined)
    admitUser(request, user)
    found.set(request, data)
  }

  return {
    ...route,
    config: { ...config, tenancy },
    ...authenticatedHooks(ownHooks, { admit, keyed, reads }),
    handler(request: FastifyRequest, reply: FastifyReply) {
      if (!request.auth) throw new Error(`${spec.url} reached its handler without admission`)
      return handler(request as Request<S>, reply as Reply<S>, { user: request.auth.user, data: found.get(request) ?? [], db: keyed.dbOf(request) })
    },
  } as unknown as TypeboxRoute
}

/**
 * A route anyone may call (no bearer token): its own hooks only, and on a keyed route (route 10)
 * the Idempotency-Key after them, scoped to its path, whose secret is its credential.
 */
export function publicRoute<const S extends FastifySchema>(spec: PublicRouteSpec<S>): TypeboxRoute {
  const { config, preHandler, onSend, onResponse, handler, ...route } = spec
  const keyed = keyHooks(spec)
  return {
    ...route,
    config: { ...config, public: true },
    preHandler: [...own(preHandler), ...keyed.preHandler],
    onSend: [...own(onSend), ...keyed.onSend],
    onResponse: [...own(onResponse), ...keyed.onResponse],
    handler(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      return handler.call(this, request as Request<S>, reply as Reply<S>, { db: keyed.dbOf(request) })
    },
  } as unknown as TypeboxRoute
}

import type { Static, TSchema } from '@sinclair/typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type {
  ContextConfigDefault,
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
import type { CompanyRoleContext, RoleRequirement } from './membership.js'
import type { AuthenticatedUser } from './principal.js'
import { PrincipalStatement, ScopedStatement, type CompanyRead, type UserRead } from './scoped-statement.js'

/** How a route reaches the tenancy pipeline (src/tenancy/plugin.ts); set only by the constructs below. */
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
  config?: Omit<FastifyContextConfig, 'tenancy'>
}

/**
 * What a company route's handler is given: the admitted member, their user, the read's data row
 * (undefined when it found none), and the database to work on (`request.db`: a keyed request's
 * transaction, else the app's; src/plugins/database.ts decides).
 */
export interface CompanyTenancy<Data> {
  companyRole: CompanyRoleContext
  user: AuthenticatedUser
  data: Data | undefined
  db: Db
}

export interface UserTenancy<Data> {
  user: AuthenticatedUser
  data: Data[]
  db: Db
}

export type CompanyRouteSpec<S extends FastifySchema, Data> = RouteParts<S> &
  RoleRequirement & {
    /** A read's data query: run in one statement with the principal and membership, gated on the membership. */
    read?: CompanyRead<ParamsOf<S>, Data>
    handler: (request: Request<S>, reply: Reply<S>, tenancy: CompanyTenancy<Data>) => Returns<S>
  }

export type UserRouteSpec<S extends FastifySchema, Data> = RouteParts<S> & {
  /** A read's data query, run in one statement with the token's principal; its rows ordered by `orderBy`. */
  read?: UserRead<ParamsOf<S>, Data>
  orderBy?: readonly (keyof Data & string)[]
  handler: (request: Request<S>, reply: Reply<S>, tenancy: UserTenancy<Data>) => Returns<S>
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

const notAdmitted = (url: string) => new Error(`${url} reached its handler without the tenancy pipeline's admission`)

/**
 * A route acting for `{company_role_id}` (§3), the only way to declare one (the pipeline refuses to
 * start with any other). A read's data query runs in the one statement that admits the caller; a
 * route without one (a write) is admitted before its handler. The handler gets the member.
 */
export function companyRoute<const S extends FastifySchema, Data = never>(spec: CompanyRouteSpec<S, Data>): TypeboxRoute {
  const { role, permission, read, handler, config, ...route } = spec
  const tenancy: TenancyDeclaration = {
    kind: 'company',
    requirement: role ? { role, permission } : { permission },
    ...(read ? { statement: new ScopedStatement(read as CompanyRead<object, Data>) as ScopedStatement<object, unknown> } : {}),
  }
  return {
    ...route,
    config: { ...config, tenancy },
    handler(request, reply) {
      const { auth, companyRole } = request
      if (!auth || !companyRole) throw notAdmitted(spec.url)
      const given = { companyRole, user: auth.user, data: request.tenancyData as Data | undefined, db: request.db }
      return handler(request as Request<S>, reply as Reply<S>, given)
    },
  } as TypeboxRoute
}

/** An authenticated route of the token's user alone (route 4). */
export function userRoute<const S extends FastifySchema, Data = never>(spec: UserRouteSpec<S, Data>): TypeboxRoute {
  const { read, orderBy, handler, config, ...route } = spec
  const tenancy: TenancyDeclaration = {
    kind: 'user',
    ...(read ? { statement: new PrincipalStatement(read as UserRead<object, Data>, orderBy) as PrincipalStatement<object, unknown> } : {}),
  }
  return {
    ...route,
    config: { ...config, tenancy },
    handler(request, reply) {
      if (!request.auth) throw notAdmitted(spec.url)
      return handler(request as Request<S>, reply as Reply<S>, {
        user: request.auth.user,
        data: (request.tenancyData ?? []) as Data[],
        db: request.db,
      })
    },
  } as TypeboxRoute
}

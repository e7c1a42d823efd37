import { AsyncLocalStorage } from 'node:async_hooks'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import type { CompiledQuery, Kysely, LogEvent } from 'kysely'
import pg from 'pg'
import type { Database } from '../../db/types.js'
import { DEMO_LOGIN } from '../../schemas/examples.js'
import { authorise, type CompanyRoleContext } from '../../src/tenancy/membership.js'
import type { DeclaredRoute } from '../../src/tenancy/plugin.js'
import { bearer, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { operationOf, routeName } from '../helpers/declared-routes.js'

/**
 * The plan check's machinery (test/platform/plans.test.ts): every route of the app called with data
 * the caller can see, every statement it ran recorded with the routes that ran it, and each planned
 * as the service plans it (generically) to find sequential scans. The routes come from the app: the
 * OpenAPI document (every documented operation, its examples) and the tenancy registry
 * (`app.tenancyRoutes`: who may call a declared route, and the read statement it must run). A new
 * route is checked without editing anything here, or the check fails naming it.
 */

/** What PostgreSQL's EXPLAIN (FORMAT JSON) says of a plan node. */
export interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Actual Loops'?: number
  Plans?: PlanNode[]
}

export const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)]

/** Every table of the service grows with the business: a sequential scan of any is a bug. */
const BOUNDED_TABLES = new Set(['kysely_migration', 'kysely_migration_lock'])

export function seqScans(node: PlanNode): string[] {
  return nodes(node)
    .filter((each) => each['Node Type'] === 'Seq Scan' && !BOUNDED_TABLES.has(each['Relation Name'] ?? ''))
    .map((each) => each['Relation Name'] ?? '?')
}

/** A parameter as the text of a literal for EXECUTE (its type is the one PREPARE inferred). */
export function literalOf(value: unknown, client: pg.Client): string {
  if (value === null || value === undefined) return 'NULL'
  if (Buffer.isBuffer(value)) return `'\\x${value.toString('hex')}'`
  if (value instanceof Date) return client.escapeLiteral(value.toISOString())
  if (Array.isArray(value)) {
    const items = value.map((item) =>
      item === null
        ? 'NULL'
        : Buffer.isBuffer(item)
          ? `"\\\\x${item.toString('hex')}"`
          : `"${String(item).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`,
    )
    return client.escapeLiteral(`{${items.join(',')}}`)
  }
  return client.escapeLiteral(typeof value === 'object' ? JSON.stringify(value) : String(value))
}

interface Recorded {
  query: CompiledQuery
  /** The routes (their test names) that ran it. */
  routes: Set<string>
}

/**
 * Kysely's query log (the database handle's `log` option), each statement once, with the routes
 * that ran it: the route whose request's async context ran the statement (`as`), so that a write
 * a route leaves running after its answer is still its own.
 */
export class StatementLog {
  readonly statements = new Map<string, Recorded>()
  /** The route running; null: the check's own statements, not recorded. */
  private readonly route = new AsyncLocalStorage<string | null>()

  readonly log = (event: LogEvent): void => {
    const route = this.route.getStore()
    if (route === null || event.level !== 'query' || !/^\s*(select|insert|update|delete|with)\b/i.test(event.query.sql)) return
    const recorded = this.statements.get(event.query.sql) ?? { query: event.query, routes: new Set<string>() }
    recorded.routes.add(route ?? 'no route')
    this.statements.set(event.query.sql, recorded)
  }

  /** Runs `run` as `route`'s (null: unrecorded), awaited inside: app.inject's answer is lazy, it runs when awaited. */
  as<T>(route: string | null, run: () => PromiseLike<T>): Promise<T> {
    return this.route.run(route, async () => await run())
  }

  clear(): void {
    this.statements.clear()
  }
}

// ---------------------------------------------------------------- calling every route

interface Parameter {
  in: string
  name: string
  example?: unknown
  examples?: Record<string, { value: unknown }>
}

interface Operation {
  parameters?: Parameter[]
  requestBody?: { content?: Record<string, { example?: unknown; examples?: Record<string, { value: unknown }> }> }
}

export interface Request {
  url: string
  payload?: unknown
}

/** What the examples cannot give a public route (a live token, a signed link, the test's secret), by operation. */
export type PublicCase = (context: {
  app: FastifyInstance
  db: Kysely<Database>
  example: Request & { params: Record<string, string> }
}) => Promise<Request>

/** Another request of a route that reaches statements its example does not (another branch), with the path parameters it changes. */
export interface Branch {
  why: string
  params: Record<string, string>
}

export interface ExerciseOptions {
  /** Only the operations this accepts (a test's throwaway routes). */
  only?: (operation: string) => boolean
  publicCases?: Record<string, PublicCase>
  branches?: Record<string, Branch[]>
}

const pathOf = (template: string, params: Record<string, string>): string =>
  template.replace(/\{(\w+)\}/g, (_match, name: string) => encodeURIComponent(params[name] ?? ''))

const is2xx = (response: LightMyRequestResponse): boolean => response.statusCode >= 200 && response.statusCode < 300

/** A demo user who may act for `companyRoleId` on the route (the app's own rule, src/tenancy/membership.ts), by the demo data. */
async function memberFor(db: Kysely<Database>, route: DeclaredRoute, companyRoleId: string): Promise<string | undefined> {
  if (route.tenancy.kind !== 'company') return DEMO_LOGIN.email
  const requirement = route.tenancy.requirement
  const members = await db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .innerJoin('company_roles', 'company_roles.id', 'memberships.company_role_id')
    .select(['users.email', 'company_roles.id', 'company_roles.company_id', 'company_roles.role', 'memberships.permissions'])
    .where('memberships.company_role_id', '=', companyRoleId)
    .where('memberships.is_active', '=', true)
    .where('users.is_active', '=', true)
    .where('company_roles.is_active', '=', true)
    .where('users.migration_state', 'is', null) // the demo password is theirs; migrated users keep their old one
    .orderBy('users.email')
    .execute()
  return members.find((member) => {
    const context: CompanyRoleContext = { companyRoleId: member.id, companyId: member.company_id, role: member.role, permissions: member.permissions }
    try {
      authorise(context, requirement)
      return true
    } catch {
      return false
    }
  })?.email
}

/**
 * Calls every operation of the app's OpenAPI document (`only` narrows them) with its examples:
 * a declared route as a demo member its requirement admits for the example `company_role_id`, a
 * public route with its case where the examples cannot do. Each is sent as exemplified (one of its
 * body examples must answer 2xx), again (a retry reaches other statements: a 409, a refresh's
 * grace), twice with an `Idempotency-Key` where it takes one, and in its branches. Returns why a
 * route could not be exercised, naming it; `log` has the statements.
 */
export async function exerciseRoutes(
  app: FastifyInstance,
  db: Kysely<Database>,
  log: StatementLog,
  options: ExerciseOptions = {},
): Promise<string[]> {
  const only = options.only ?? (() => true)
  const problems: string[] = []
  const document = app.swagger() as unknown as { paths: Record<string, Record<string, Operation>> }
  const declared = new Map(app.tenancyRoutes.map((route) => [operationOf(route), route]))
  const operations = Object.entries(document.paths).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, operation]) => ({
      // Without a trailing slash, as operationOf names a declared route (route 12 is documented with one).
      key: `${method.toUpperCase()} ${path.replace(/(.)\/$/, '$1')}`,
      method: method.toUpperCase(),
      path,
      operation,
    })),
  )
  const documented = new Set(operations.map((operation) => operation.key))
  for (const key of declared.keys()) {
    if (only(key) && !documented.has(key)) problems.push(`${key} is declared but not in the OpenAPI document: it has no examples to be called with`)
  }
  for (const key of [...Object.keys(options.publicCases ?? {}), ...Object.keys(options.branches ?? {})]) {
    if (only(key) && !documented.has(key)) problems.push(`a case or branch names ${key}, which the app no longer has`)
  }
  const tokens = new Map<string, string>()
  let keys = 0

  for (const { key, method, path, operation } of operations.filter((each) => only(each.key))) {
    const route = declared.get(key)
    const label = route ? routeName(route) : key
    const fail = (why: string) => problems.push(`${label}: ${why}`)

    const params: Record<string, string> = {}
    const unexampled: string[] = []
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in !== 'path') continue
      const example = parameter.example ?? Object.values(parameter.examples ?? {})[0]?.value
      if (example === undefined) unexampled.push(parameter.name)
      else params[parameter.name] = String(example)
    }
    if (unexampled.length > 0) {
      fail(
        `no example for path parameter ${unexampled.join(', ')}: give its schema one of the demo data (schemas/examples.ts) to plan its statements`,
      )
      continue
    }
    const media = operation.requestBody?.content?.['application/json']
    const bodies: unknown[] = media
      ? [...Object.values(media.examples ?? {}).map((example) => example.value), ...(media.example === undefined ? [] : [media.example])]
      : []
    let requests: Request[] = (bodies.length > 0 ? bodies : [undefined]).map((payload) => ({ url: pathOf(path, params), payload }))
    const publicCase = options.publicCases?.[key]
    if (publicCase) requests = [await log.as(null, () => publicCase({ app, db, example: { ...requests[0]!, params } }))]

    let headers: Record<string, string> = {}
    if (route) {
      const email = await log.as(null, () => memberFor(db, route, params.company_role_id ?? ''))
      if (!email) {
        fail(
          `no demo user may act for its example company_role_id ${params.company_role_id}: give it the example of a role whose member has the permission`,
        )
        continue
      }
      if (!tokens.has(email)) tokens.set(email, (await log.as(null, () => obtainTokens(app, email, DEMO_PASSWORD))).access)
      headers = bearer(tokens.get(email)!)
    }
    const send = (request: Request, extra: Record<string, string> = {}) =>
      log.as(label, () =>
        app.inject({
          method: method as InjectOptions['method'],
          url: request.url,
          headers: { ...headers, ...extra },
          ...(request.payload === undefined ? {} : { payload: request.payload as InjectOptions['payload'] }),
        }),
      )

    let exercised: Request | undefined
    const answers: string[] = []
    for (const request of requests) {
      const answer = await send(request)
      if (is2xx(answer)) {
        exercised = request
        break
      }
      answers.push(`${answer.statusCode} ${answer.body.slice(0, 200)}`)
    }
    if (!exercised) {
      fail(
        `its examples (${method} ${requests[0]!.url}${route ? ' as a member' : ''}) answered ${answers.join('; ')}: ` +
          'make them name demo data the caller can see, or give a public route a case',
      )
      continue
    }
    await send(exercised)
    if (operation.parameters?.some((parameter) => parameter.in === 'header' && parameter.name.toLowerCase() === 'idempotency-key')) {
      const key = `plan-check-${++keys}`
      await send(exercised, { 'idempotency-key': key })
      await send(exercised, { 'idempotency-key': key })
    }
    for (const branch of options.branches?.[key] ?? []) {
      const answer = await send({ ...exercised, url: pathOf(path, { ...params, ...branch.params }) })
      if (!is2xx(answer)) fail(`its branch "${branch.why}" answered ${answer.statusCode} ${answer.body.slice(0, 200)}`)
    }
    const statement = route?.tenancy.statement
    if (statement && !log.statements.get(statement.sql)?.routes.has(label)) fail('answered 2xx without running its read statement')
  }
  return problems
}

// ---------------------------------------------------------------- planning what they ran

/**
 * Each statement of `log` planned as the service plans it (PREPARE with plan_cache_mode
 * force_generic_plan, EXECUTE with its recorded parameters): a sequential scan of a growing table,
 * named with the routes that ran the statement.
 */
export async function sequentialScans(databaseUrl: string, schema: string, log: StatementLog): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${schema} -c plan_cache_mode=force_generic_plan` })
  await client.connect()
  const scans: string[] = []
  try {
    for (const [index, { query, routes }] of [...log.statements.values()].entries()) {
      const name = `plan_check_${index}`
      await client.query(`PREPARE ${name} AS ${query.sql}`)
      const args = query.parameters.length ? `(${query.parameters.map((value) => literalOf(value, client)).join(', ')})` : ''
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) EXECUTE ${name}${args}`)
      await client.query(`DEALLOCATE ${name}`)
      const found = seqScans(rows[0]!['QUERY PLAN'][0].Plan)
      if (found.length) scans.push(`Seq Scan on ${found.join(', ')} in a statement of ${[...routes].join(', ')}:\n  ${query.sql}`)
    }
  } finally {
    await client.end()
  }
  return scans
}

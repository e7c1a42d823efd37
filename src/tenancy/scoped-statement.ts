import type { FastifyRequest } from 'fastify'
import { sql, type Expression, type Kysely, type SelectQueryBuilder } from 'kysely'
import { Precompiled } from '../db/precompiled.js'
import type { Database } from '../db/types.js'
import type { RoleKind } from '../vocabulary.js'
import { admitMember, admitUser, principalKey, scopedPrincipalKey } from './admission.js'
import {
  activeUserForToken,
  principalOf,
  userOf,
  userWithMembership,
  type MemberColumns,
  type PrincipalColumns,
  type ScopedPrincipal,
  type TokenPrincipal,
} from './principal.js'

/**
 * The caller's company role inside a scoped statement, for data subqueries that depend on it (route
 * 9's visibility). They stand for the member's columns, so a repository never names tenancy's joins.
 */
export interface MemberRole {
  id: Expression<string>
  role: Expression<RoleKind>
}

/** What a data subquery may use of the scope besides its own parameters. */
export interface Scope {
  /** The `{company_role_id}` of the path (a parameter). */
  companyRoleId: string
  /** The member's role, as columns of the statement. */
  member: MemberRole
}

const MEMBER_ROLE: MemberRole = { id: sql.ref<string>('member.member_role_id'), role: sql.ref<RoleKind>('member.member_role') }

/** A data subquery: any select, whose columns become the data row. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type DataQuery<Data> = SelectQueryBuilder<any, any, Data>

const PRINCIPAL_COLUMNS = ['principal_id', 'principal_email', 'principal_name'] as const
const MEMBER_COLUMNS = ['member_role_id', 'member_company_id', 'member_role', 'member_permissions'] as const
const FOUND = 'data_found'

type StatementRow = PrincipalColumns & MemberColumns & { [FOUND]: boolean | null } & Record<string, unknown>

const NOT_DATA = new Set<string>([...PRINCIPAL_COLUMNS, ...MEMBER_COLUMNS, FOUND])

/** Splits a statement's rows: the data columns, named once from the first row the driver returns. */
class RowSplitter {
  private dataColumns: string[] | undefined

  dataOf<Data>(row: StatementRow): Data {
    const columns = (this.dataColumns ??= Object.keys(row).filter((column) => !NOT_DATA.has(column)))
    const data: Record<string, unknown> = {}
    for (const column of columns) data[column] = row[column]
    return data as Data
  }
}

/**
 * A one-statement read of a company-scoped route (one round trip): the token's principal, their
 * membership of `{company_role_id}`, and the route's data subquery as a lateral join that runs only
 * for a member. `read` admits the caller in the pipeline's order (401 inactive user, 404 not a
 * member, 403 wrong role or permission: src/tenancy/admission.ts) before it returns the data row,
 * undefined when the subquery found none. Built and compiled once, at module load.
 */
export class ScopedStatement<Params extends object, Data> {
  private readonly statement: Precompiled<ScopedPrincipal & Params, StatementRow>
  private readonly rows = new RowSplitter()

  constructor(data: (db: Kysely<Database>, params: Params, scope: Scope) => DataQuery<Data>) {
    this.statement = new Precompiled((db, params: ScopedPrincipal & Params) =>
      userWithMembership(db, params)
        .leftJoinLateral(
          (eb) =>
            eb
              .selectFrom(data(db, params, { companyRoleId: params.companyRoleId, member: MEMBER_ROLE }).as('data_row'))
              .selectAll('data_row')
              .select(sql<boolean>`true`.as(FOUND))
              // Gated on the membership: a non-member's request computes no data.
              .where('member.member_role_id', 'is not', null)
              .as('data'),
          (join) => join.onTrue(),
        )
        .selectAll('data') as unknown as SelectQueryBuilder<Database, never, StatementRow>,
    )
  }

  /** The SQL text, for tests and EXPLAIN. */
  get sql(): string {
    return this.statement.sql
  }

  async read(request: FastifyRequest, params: Params): Promise<Data | undefined> {
    const row = await this.statement.first(request.server.db, { ...params, ...scopedPrincipalKey(request) })
    admitMember(request, row && principalOf(row))
    return row?.[FOUND] ? this.rows.dataOf<Data>(row) : undefined
  }

  /** The statement alone, without the admission: the bench's own-SQL floor (bench/own-sql-floor.ts). */
  async readUnadmitted(db: Kysely<Database>, params: ScopedPrincipal & Params): Promise<{ member: boolean; data: Data | undefined }> {
    const row = await this.statement.first(db, params)
    return { member: Boolean(row?.member_role_id), data: row?.[FOUND] ? this.rows.dataOf<Data>(row) : undefined }
  }
}

/**
 * The same for a route of the principal alone (no company role, route 4): the principal with the
 * data subquery's rows, ordered by `orderBy` (data columns). `read` answers 401 for an inactive
 * user, then returns the data rows.
 */
export class PrincipalStatement<Params extends object, Data> {
  private readonly statement: Precompiled<TokenPrincipal & Params, StatementRow>
  private readonly splitter = new RowSplitter()

  constructor(
    data: (db: Kysely<Database>, params: Params, principal: TokenPrincipal) => DataQuery<Data>,
    orderBy: readonly (keyof Data & string)[] = [],
  ) {
    this.statement = new Precompiled((db, params: TokenPrincipal & Params) => {
      let query = activeUserForToken(db, params)
        .leftJoinLateral(
          (eb) => eb.selectFrom(data(db, params, params).as('data_row')).selectAll('data_row').select(sql<boolean>`true`.as(FOUND)).as('data'),
          (join) => join.onTrue(),
        )
        .selectAll('data')
      for (const column of orderBy) query = query.orderBy(sql.ref(`data.${column}`))
      return query as unknown as SelectQueryBuilder<Database, never, StatementRow>
    })
  }

  get sql(): string {
    return this.statement.sql
  }

  /** The data rows, and the principal's user (already admitted). */
  async read(request: FastifyRequest, params: Params): Promise<Data[]> {
    const rows = await this.statement.rows(request.server.db, { ...params, ...principalKey(request) })
    const first = rows[0]
    admitUser(request, first && userOf(first))
    return rows.filter((row) => row[FOUND]).map((row) => this.splitter.dataOf<Data>(row))
  }

  /** The statement alone, without the admission (undefined: no active user): the bench's own-SQL floor. */
  async readUnadmitted(db: Kysely<Database>, params: TokenPrincipal & Params): Promise<Data[] | undefined> {
    const rows = await this.statement.rows(db, params)
    return rows.length === 0 ? undefined : rows.filter((row) => row[FOUND]).map((row) => this.splitter.dataOf<Data>(row))
  }
}

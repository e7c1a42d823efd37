import { sql, type Expression, type Kysely, type SelectQueryBuilder } from 'kysely'
import { Precompiled } from '../db/precompiled.js'
import type { Database, Db } from '../../db/types.js'
import type { RoleKind } from '../vocabulary.js'
import {
  activeUserForToken,
  principalOf,
  userOf,
  userWithMembership,
  type AuthenticatedUser,
  type MemberColumns,
  type PrincipalColumns,
  type PrincipalWithMembership,
  type ScopedPrincipal,
  type TokenPrincipal,
} from './principal.js'

/**
 * The caller's company role inside a scoped statement, for data subqueries that depend on it (route
 * 9's visibility, a company's own rows). They stand for the member's columns, so a repository never
 * names tenancy's joins.
 */
export interface MemberRole {
  id: Expression<string>
  role: Expression<RoleKind>
  companyId: Expression<string>
}

/** What a company route's data query may use: its path's parameters and the member it acts as. */
export interface Scope<Params> {
  /** The route's path parameters, by their names in the path (statement parameters). */
  params: Params
  /** The `{company_role_id}` of the path (a parameter). */
  companyRoleId: string
  /** The member's role and company, as columns of the statement. */
  member: MemberRole
}

/** What a user route's data query may use: its path's parameters and the token's user. */
export interface UserScope<Params> {
  params: Params
  userId: string
}

/** A data query: any select, whose columns become the data row. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type DataQuery<Data> = SelectQueryBuilder<any, any, Data>

export type CompanyRead<Params, Data> = (db: Kysely<Database>, scope: Scope<Params>) => DataQuery<Data>
export type UserRead<Params, Data> = (db: Kysely<Database>, scope: UserScope<Params>) => DataQuery<Data>

const MEMBER_ROLE: MemberRole = {
  id: sql.ref<string>('member.member_role_id'),
  role: sql.ref<RoleKind>('member.member_role'),
  companyId: sql.ref<string>('member.member_company_id'),
}

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
 * A company route's read in one statement (one round trip): the token's principal, their membership
 * of `{company_role_id}`, and the route's data query as a lateral join that runs only for a member.
 * `run` returns what it found; the route's admission (src/tenancy/routes.ts) admits the caller from it in
 * the order of checks. Built and compiled once, when the route is declared.
 */
export class ScopedStatement<Params extends object, Data> {
  private readonly statement: Precompiled<ScopedPrincipal & Params, StatementRow>
  private readonly rows = new RowSplitter()

  constructor(read: CompanyRead<Params, Data>) {
    this.statement = new Precompiled(
      (db, params: ScopedPrincipal & Params) =>
        userWithMembership(db, params)
          .leftJoinLateral(
            (eb) =>
              eb
                .selectFrom(read(db, { params, companyRoleId: params.companyRoleId, member: MEMBER_ROLE }).as('data_row'))
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

  /** The principal with their membership (undefined: no active user), and the data row if the query found one. */
  async run(db: Db, key: ScopedPrincipal, params: Params): Promise<{ principal: PrincipalWithMembership | undefined; data: Data | undefined }> {
    const row = await this.statement.first(db, { ...params, ...key })
    return { principal: row && principalOf(row), data: row?.[FOUND] ? this.rows.dataOf<Data>(row) : undefined }
  }
}

/**
 * The same for a route of the principal alone (no company role, route 4): the principal with the
 * data query's rows, ordered by `orderBy` (data columns).
 */
export class PrincipalStatement<Params extends object, Data> {
  private readonly statement: Precompiled<TokenPrincipal & Params, StatementRow>
  private readonly splitter = new RowSplitter()

  constructor(read: UserRead<Params, Data>, orderBy: readonly string[] = []) {
    this.statement = new Precompiled((db, params: TokenPrincipal & Params) => {
      let query = activeUserForToken(db, params)
        .leftJoinLateral(
          (eb) =>
            eb
              .selectFrom(read(db, { params, userId: params.userId }).as('data_row'))
              .selectAll('data_row')
              .select(sql<boolean>`true`.as(FOUND))
              .as('data'),
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

  /** The token's user (undefined: not active) and the data rows. */
  async run(db: Db, key: TokenPrincipal, params: Params): Promise<{ user: AuthenticatedUser | undefined; data: Data[] }> {
    const rows = await this.statement.rows(db, { ...params, ...key })
    const first = rows[0]
    return { user: first && userOf(first), data: rows.filter((row) => row[FOUND]).map((row) => this.splitter.dataOf<Data>(row)) }
  }
}

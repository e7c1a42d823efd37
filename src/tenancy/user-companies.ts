import type { Kysely } from 'kysely'
import type { AuthenticatedUser } from '../auth/repository.js'
import { Precompiled } from '../db/precompiled.js'
import type { Database, Db, Permission, RoleKind } from '../db/types.js'
import { activeUserForToken, userOf, type TokenPrincipal } from './principal.js'

export interface UserCompany {
  id: string
  name: string
  trade_name: string | null
  tax_id: string
  roles: { company_role_id: string; role: RoleKind; permissions: Permission[] }[]
}

/** The user's active memberships of active roles of active companies, one row per membership. */
function membershipRows(db: Kysely<Database>, userId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('company_roles', 'company_roles.id', 'memberships.company_role_id')
    .innerJoin('companies', 'companies.id', 'company_roles.company_id')
    .select([
      'companies.id',
      'companies.name',
      'companies.trade_name',
      'companies.tax_id',
      'company_roles.id as company_role_id',
      'company_roles.role',
      'memberships.permissions',
    ])
    .where('memberships.user_id', '=', userId)
    .where('memberships.is_active', '=', true)
    .where('company_roles.is_active', '=', true)
    .where('companies.is_active', '=', true)
}

const userCompaniesStatement = new Precompiled((db, { userId }: { userId: string }) =>
  membershipRows(db, userId).orderBy('companies.name').orderBy('companies.id').orderBy('company_roles.role'),
)

/**
 * Route 4 in one statement: the token's principal (no row when not active) with their membership
 * rows left-joined, so that the check and the read cost one round trip.
 */
const principalCompaniesStatement = new Precompiled((db, key: TokenPrincipal) =>
  activeUserForToken(db, key)
    .leftJoinLateral(membershipRows(db, key.userId).as('company'), (join) => join.onTrue())
    .select([
      'company.id',
      'company.name',
      'company.trade_name',
      'company.tax_id',
      'company.company_role_id',
      'company.role',
      'company.permissions',
    ])
    .orderBy('company.name')
    .orderBy('company.id')
    .orderBy('company.role'),
)

type MembershipRow = {
  id: string | null
  name: string | null
  trade_name: string | null
  tax_id: string | null
  company_role_id: string | null
  role: RoleKind | null
  permissions: Permission[] | null
}

/** Groups membership rows (ordered by company) into companies; rows without a membership are skipped. */
function groupByCompany(rows: readonly MembershipRow[]): UserCompany[] {
  const companies = new Map<string, UserCompany>()
  for (const row of rows) {
    if (row.id === null || row.name === null || row.tax_id === null || row.company_role_id === null || row.role === null) continue
    let company = companies.get(row.id)
    if (!company) {
      company = { id: row.id, name: row.name, trade_name: row.trade_name, tax_id: row.tax_id, roles: [] }
      companies.set(row.id, company)
    }
    company.roles.push({ company_role_id: row.company_role_id, role: row.role, permissions: [...(row.permissions ?? [])].sort() })
  }
  return [...companies.values()]
}

/** The user's active memberships of active roles of active companies, grouped by company, ordered by name. */
export async function listUserCompanies(db: Db, userId: string): Promise<UserCompany[]> {
  return groupByCompany(await userCompaniesStatement.rows(db, { userId }))
}

/** Route 4: the token's user, if active, with their companies; undefined when the user is not active. */
export async function findPrincipalCompanies(
  db: Db,
  key: TokenPrincipal,
): Promise<{ user: AuthenticatedUser; companies: UserCompany[] } | undefined> {
  const rows = await principalCompaniesStatement.rows(db, key)
  const first = rows[0]
  return first && { user: userOf(first), companies: groupByCompany(rows) }
}

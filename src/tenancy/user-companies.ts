import type { Static } from '@sinclair/typebox'
import type { Kysely } from 'kysely'
import type { UserCompany as UserCompanySchema } from '../../schemas/company.js'
import { Precompiled } from '../db/precompiled.js'
import type { Database, Db } from '../../db/types.js'
import type { Permission, RoleKind } from '../vocabulary.js'
import { activeMemberships } from './principal.js'
import type { UserScope } from './scoped-statement.js'

/** A company of the caller with their active memberships of it (routes 2 and 4). */
export type UserCompany = Static<typeof UserCompanySchema>

/** The user's active memberships of active roles of active companies, one row per membership. */
function membershipRows(db: Kysely<Database>, userId: string) {
  return activeMemberships(db)
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
}

const userCompaniesStatement = new Precompiled((db, { userId }: { userId: string }) =>
  membershipRows(db, userId).orderBy('companies.name').orderBy('companies.id').orderBy('company_roles.role'),
)

/** Route 4's data query, run in one statement with the token's principal (src/tenancy/routes.ts's userRoute). */
export const userCompaniesRead = (db: Kysely<Database>, scope: UserScope<object>) => membershipRows(db, scope.userId)

/** Route 4's rows in the order `groupByCompany` takes them. */
export const USER_COMPANIES_ORDER = ['name', 'id', 'role'] as const

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
export function groupByCompany(rows: readonly MembershipRow[]): UserCompany[] {
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

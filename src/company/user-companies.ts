import type { Db, Permission, RoleKind } from '../db/types.js'

export interface UserCompany {
  id: string
  name: string
  trade_name: string | null
  tax_id: string
  roles: { company_role_id: string; role: RoleKind; permissions: Permission[] }[]
}

/** The user's active memberships of active roles of active companies, grouped by company, ordered by name. */
export async function listUserCompanies(db: Db, userId: string): Promise<UserCompany[]> {
  const rows = await db
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
    .orderBy('companies.name')
    .orderBy('companies.id')
    .orderBy('company_roles.role')
    .execute()
  const companies = new Map<string, UserCompany>()
  for (const row of rows) {
    let company = companies.get(row.id)
    if (!company) {
      company = { id: row.id, name: row.name, trade_name: row.trade_name, tax_id: row.tax_id, roles: [] }
      companies.set(row.id, company)
    }
    company.roles.push({ company_role_id: row.company_role_id, role: row.role, permissions: [...row.permissions].sort() })
  }
  return [...companies.values()]
}

import { activeUserForTokenQuery, type AuthenticatedUser } from '../auth/repository.js'
import type { Db } from '../db/types.js'
import type { CompanyRoleContext } from './membership.js'

export interface PrincipalWithMembership {
  user: AuthenticatedUser
  /** Undefined when the user has no active membership of an active role of an active company. */
  membership: CompanyRoleContext | undefined
}

/**
 * The user behind an access token (active, token family not revoked) together with their
 * membership of one company role, in one round trip: the JWT hook runs it for company-scoped
 * routes, so that their membership check costs no second query. Memberships are unique per
 * (user, role), so the left joins add at most one row.
 */
export async function findUserWithMembership(
  db: Db,
  userId: string,
  familyId: string,
  companyRoleId: string,
): Promise<PrincipalWithMembership | undefined> {
  const row = await activeUserForTokenQuery(db, userId, familyId)
    .leftJoin('memberships', (join) =>
      join
        .onRef('memberships.user_id', '=', 'users.id')
        .on('memberships.company_role_id', '=', companyRoleId)
        .on('memberships.is_active', '=', true),
    )
    .leftJoin('company_roles', (join) =>
      join.onRef('company_roles.id', '=', 'memberships.company_role_id').on('company_roles.is_active', '=', true),
    )
    .leftJoin('companies', (join) =>
      join.onRef('companies.id', '=', 'company_roles.company_id').on('companies.is_active', '=', true),
    )
    .select([
      'company_roles.id as company_role_id',
      'company_roles.company_id',
      'company_roles.role',
      'memberships.permissions',
      'companies.id as active_company_id',
    ])
    .executeTakeFirst()
  if (!row) return undefined
  const { company_role_id: roleId, company_id: companyId, role, permissions, active_company_id: activeCompanyId } = row
  const member = activeCompanyId !== null && roleId !== null && companyId !== null && role !== null
  return {
    user: { id: row.id, email: row.email, name: row.name },
    membership: member ? { companyRoleId: roleId, companyId, role, permissions: permissions ?? [] } : undefined,
  }
}

import type { Permission, RoleKind } from '../vocabulary.js'
import { problem } from '../lib/problem.js'

/** The company role a request acts for, as the caller's membership grants it. */
export interface CompanyRoleContext {
  companyRoleId: string
  companyId: string
  role: RoleKind
  permissions: readonly Permission[]
}

export const hasPermission = (context: CompanyRoleContext, permission: Permission): boolean =>
  context.permissions.includes('admin') || context.permissions.includes(permission)

export interface RoleRequirement {
  /** The permission the route needs; `admin` grants all. */
  permission: Permission
  /** The kind of role the route is for, when it is for one kind only. */
  role?: RoleKind
}

/**
 * §3: no membership is 404 whether or not the role exists (nobody can probe other tenants);
 * the wrong kind of role, then a missing permission, are 403.
 */
export function authorise(context: CompanyRoleContext | undefined, requirement: RoleRequirement): CompanyRoleContext {
  if (!context) throw problem(404, 'not_found', 'Not found.')
  if (requirement.role && context.role !== requirement.role) {
    throw problem(403, 'wrong_role', `This action is for a ${requirement.role} company role.`)
  }
  if (!hasPermission(context, requirement.permission)) {
    throw problem(403, 'permission_denied', 'You do not have permission to perform this action.')
  }
  return context
}

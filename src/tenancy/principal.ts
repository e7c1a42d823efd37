import { sql, type Kysely } from 'kysely'
import { Precompiled } from '../db/precompiled.js'
import type { Database } from '../../db/types.js'
import type { Permission, RoleKind } from '../vocabulary.js'
import type { CompanyRoleContext } from './membership.js'

/** The active user behind a request's access token. */
export interface AuthenticatedUser {
  id: string
  email: string
  name: string
}

/** What an access token names: its user and its token family. */
export interface TokenPrincipal {
  userId: string
  familyId: string
}

/** A token's principal acting for one company role (the routes with `{company_role_id}`). */
export interface ScopedPrincipal extends TokenPrincipal {
  companyRoleId: string
}

/**
 * The user behind an access token, if still active and the token's family neither revoked nor
 * past its absolute end (§2; the token's `exp` is capped there too, but a family's end may be
 * brought forward): one row or none. Every authenticated request runs it, alone or as the start of a larger statement;
 * its columns are prefixed so that a statement can add its own beside them.
 */
export function activeUserForToken(db: Kysely<Database>, key: TokenPrincipal) {
  return db
    .selectFrom('users')
    .innerJoin('token_families', 'token_families.user_id', 'users.id')
    .select(['users.id as principal_id', 'users.email as principal_email', 'users.name as principal_name'])
    .where('users.id', '=', key.userId)
    .where('users.is_active', '=', true)
    .where('token_families.id', '=', key.familyId)
    .where('token_families.revoked_at', 'is', null)
    .where('token_families.absolute_expires_at', '>', sql<Date>`now()`)
}

/**
 * §3's active membership, the one place it is written: the membership, its company role and the
 * role's company all active. Routes 2 and 4 list a user's; every company-scoped request reads one.
 */
export function activeMemberships(db: Kysely<Database>) {
  return db
    .selectFrom('memberships')
    .innerJoin('company_roles', 'company_roles.id', 'memberships.company_role_id')
    .innerJoin('companies', 'companies.id', 'company_roles.company_id')
    .where('memberships.is_active', '=', true)
    .where('company_roles.is_active', '=', true)
    .where('companies.is_active', '=', true)
}

/**
 * `activeUserForToken` with the user's active membership of one company role in the `member_`
 * columns (null without one), as the lateral `member`. Memberships are unique per (user, role), so
 * it adds at most one row.
 */
export function userWithMembership(db: Kysely<Database>, key: ScopedPrincipal) {
  return activeUserForToken(db, key)
    .leftJoinLateral(
      activeMemberships(db)
        .select([
          'company_roles.id as member_role_id',
          'company_roles.company_id as member_company_id',
          'company_roles.role as member_role',
          'memberships.permissions as member_permissions',
        ])
        .where('memberships.user_id', '=', key.userId)
        .where('memberships.company_role_id', '=', key.companyRoleId)
        .as('member'),
      (join) => join.onTrue(),
    )
    .selectAll('member')
}

export interface PrincipalColumns {
  principal_id: string
  principal_email: string
  principal_name: string
}

export interface MemberColumns {
  member_role_id: string | null
  member_company_id: string | null
  member_role: RoleKind | null
  member_permissions: Permission[] | null
}

export interface PrincipalWithMembership {
  user: AuthenticatedUser
  /** Undefined when the user has no active membership of an active role of an active company. */
  membership: CompanyRoleContext | undefined
}

export const userOf = (row: PrincipalColumns): AuthenticatedUser => ({
  id: row.principal_id,
  email: row.principal_email,
  name: row.principal_name,
})

export function principalOf(row: PrincipalColumns & MemberColumns): PrincipalWithMembership {
  const { member_role_id: roleId, member_company_id: companyId, member_role: role, member_permissions: permissions } = row
  const member = roleId !== null && companyId !== null && role !== null
  return {
    user: userOf(row),
    membership: member ? { companyRoleId: roleId, companyId, role, permissions: permissions ?? [] } : undefined,
  }
}

const activeUserStatement = new Precompiled((db, key: TokenPrincipal) => activeUserForToken(db, key))
const userWithMembershipStatement = new Precompiled((db, key: ScopedPrincipal) => userWithMembership(db, key))

export async function findActiveUserForToken(db: Kysely<Database>, key: TokenPrincipal): Promise<AuthenticatedUser | undefined> {
  const row = await activeUserStatement.first(db, key)
  return row && userOf(row)
}

/** The principal and their membership of `key.companyRoleId` in one round trip; undefined when the token's user is not active. */
export async function findUserWithMembership(db: Kysely<Database>, key: ScopedPrincipal): Promise<PrincipalWithMembership | undefined> {
  const row = await userWithMembershipStatement.first(db, key)
  return row && principalOf(row)
}

import type { FastifyRequest } from 'fastify'
import { tokenNotValid } from '../tokens/tokens.js'
import { authorise, type CompanyRoleContext, type RoleRequirement } from './membership.js'
import type { AuthenticatedUser, PrincipalWithMembership, ScopedPrincipal, TokenPrincipal } from './principal.js'

/** The principal a verified bearer token names (src/tokens/authentication.ts sets the claims). */
export const principalKey = (request: FastifyRequest): TokenPrincipal => ({
  userId: request.tokenClaims.user_id,
  familyId: request.tokenClaims.fid,
})

/** The same, acting for the route's `{company_role_id}` (validated by the route's schema). */
export const scopedPrincipalKey = (request: FastifyRequest): ScopedPrincipal => ({
  ...principalKey(request),
  companyRoleId: (request.params as { company_role_id: string }).company_role_id,
})

/** 401 unless a query found the token's user active with the token's family unrevoked. */
export function admitUser(request: FastifyRequest, user: AuthenticatedUser | undefined): AuthenticatedUser {
  if (!user) throw tokenNotValid()
  request.auth = { user, claims: request.tokenClaims }
  return user
}

/** 401, then 404 / 403 by the route's requirement (src/tenancy/membership.ts). */
export function admitMember(
  request: FastifyRequest,
  principal: PrincipalWithMembership | undefined,
  requirement: RoleRequirement,
): CompanyRoleContext {
  admitUser(request, principal?.user)
  request.companyRole = authorise(principal?.membership, requirement)
  return request.companyRole
}

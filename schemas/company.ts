import { Type } from '@sinclair/typebox'
import { AuthenticatedErrors, Nullable, StringEnum, Uuid } from './common.js'

export const PermissionName = StringEnum(['documents', 'bank_accounts', 'customers', 'marketplace', 'chat', 'admin'])

export const UserCompany = Type.Object({
  id: Uuid,
  name: Type.String(),
  trade_name: Nullable(Type.String()),
  tax_id: Type.String({ description: 'CNPJ, 14 characters without punctuation' }),
  roles: Type.Array(
    Type.Object({
      company_role_id: Uuid,
      role: StringEnum(['seller', 'buyer']),
      permissions: Type.Array(PermissionName, { description: '`admin` grants every permission' }),
    }),
  ),
})
export const UserCompanies = Type.Array(UserCompany)

export const userCompaniesRouteSchema = {
  tags: ['company'],
  summary: "The caller's companies and active company roles",
  description: 'Ordered by company name.',
  response: { 200: UserCompanies, 401: AuthenticatedErrors[401], 503: AuthenticatedErrors[503] },
}

import { Type } from '@sinclair/typebox'
import { PERMISSIONS, ROLE_KINDS } from '../src/vocabulary.js'
import { Nullable, StringEnum, Uuid } from './common.js'
import { ACME_COMPANIES, DELTA_COMPANIES } from './examples.js'
import { BEARER_PROBLEMS, jsonResponse, routeResponses } from './responses.js'

export const PermissionName = StringEnum(PERMISSIONS)

export const UserCompany = Type.Object({
  id: Uuid,
  name: Type.String(),
  trade_name: Nullable(Type.String()),
  tax_id: Type.String({ description: 'CNPJ, 14 characters without punctuation' }),
  roles: Type.Array(
    Type.Object({
      company_role_id: Uuid,
      role: StringEnum(ROLE_KINDS),
      permissions: Type.Array(PermissionName, { description: '`admin` grants every permission' }),
    }),
  ),
})
export const UserCompanies = Type.Array(UserCompany)

export const userCompaniesRouteSchema = {
  tags: ['company'],
  operationId: 'getUserCompanies',
  summary: "The caller's companies and active company roles",
  description: "Ordered by company name. Each role's `company_role_id` is the id the company-role routes take in their path.",
  response: routeResponses(
    {
      200: jsonResponse("The caller's companies, each with the company roles the caller is an active member of", UserCompanies, {
        alice: { summary: 'alice@acme.example: Acme seller, admin', value: ACME_COMPANIES },
        dave: { summary: 'dave@delta.example: Delta buyer and Delta seller', value: DELTA_COMPANIES },
      }),
    },
    BEARER_PROBLEMS,
  ),
}

import { Type, type Static } from '@sinclair/typebox'
import { Errors, Nullable, StringEnum, Timestamp, Uuid } from './common.js'

export const CustomerParams = Type.Object({
  company_role_id: Uuid,
  id: Uuid,
})

export const CustomerRequest = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200, description: 'Trimmed; 1 to 200 characters' }),
  tax_id: Type.String({
    minLength: 1,
    maxLength: 32,
    description:
      'CPF (11 digits) or CNPJ (14 characters; the alphanumeric CNPJ included). Dots, slashes, hyphens and spaces ' +
      'are removed and letters upper-cased; the check digits must match.',
  }),
  email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254, description: 'Trimmed' }))),
  phone: Type.Optional(
    Nullable(
      Type.String({
        maxLength: 32,
        description: 'E.164 with the country code (`+5511987654321`); spaces, dots, hyphens and parentheses are removed',
      }),
    ),
  ),
})
export type CustomerRequest = Static<typeof CustomerRequest>

export const Customer = Type.Object(
  {
    id: Uuid,
    company_role_id: Uuid,
    name: Type.String(),
    tax_id: Type.String({ description: 'Normalised: digits (CPF) or 14 characters (CNPJ)' }),
    tax_id_type: StringEnum(['cpf', 'cnpj']),
    email: Nullable(Type.String()),
    phone: Nullable(Type.String({ description: 'E.164' })),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { description: 'The customer as stored, both when created and on every later call' },
)

export const saveCustomerRouteSchema = {
  tags: ['company'],
  summary: "Create or update one of the seller's customers",
  description:
    'Seller role, `customers` permission. An idempotent upsert under the client-chosen `id`: the body is the whole ' +
    'record, so an omitted `email` or `phone` is stored as null. Answers `201` with the customer both when it is ' +
    'created and on every later call; `updated_at` moves only when `name`, `email` or `phone` changed. ' +
    'A `tax_id` that differs from the stored one is `409 tax_id_immutable` (with `current_tax_id`); a tax id that ' +
    'another customer of the role already has is `409 duplicate_customer` (with that `customer_id`). An `id` used ' +
    'by another company role is `404`. Invalid check digits, e-mail or phone are `400 invalid` with `errors` per field.',
  params: CustomerParams,
  body: CustomerRequest,
  response: {
    201: Customer,
    400: Errors[400],
    401: Errors[401],
    403: Type.Ref('Problem', { description: 'Not a seller role (`wrong_role`) or no `customers` permission (`permission_denied`)' }),
    404: Errors[404],
    409: Type.Ref('Problem', { description: '`tax_id_immutable` or `duplicate_customer`' }),
    413: Errors[413],
    415: Errors[415],
    503: Errors[503],
  },
}

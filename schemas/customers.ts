import { Type, type Static } from '@sinclair/typebox'
import { DEMO } from '../db/seed/ids.js'
import { TAX_ID_TYPES } from '../src/vocabulary.js'
import { Nullable, StringEnum, Timestamp, Uuid } from './common.js'
import { CUSTOMER, CUSTOMER_REQUEST, NEW_CUSTOMER_ID } from './examples.js'
import { BEARER_PROBLEMS, BODY_PROBLEMS, invalid, jsonResponse, Problems, routeResponses, when, withExample, withExamples } from './responses.js'
import { IDEMPOTENCY_PROBLEMS, IdempotencyHeaders, replayable } from './idempotency.js'

export const CustomerParams = Type.Object({
  company_role_id: withExample(Uuid, DEMO.roles.acmeSeller),
  id: withExample(Type.String({ format: 'uuid', description: "The client's own id for this customer (a UUID it chose)" }), NEW_CUSTOMER_ID),
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
    tax_id_type: StringEnum(TAX_ID_TYPES),
    email: Nullable(Type.String()),
    phone: Nullable(Type.String({ description: 'E.164' })),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { description: 'The customer as stored, both when created and on every later call' },
)

export const saveCustomerRouteSchema = {
  operationId: 'saveCustomer',
  tags: ['company'],
  summary: "Create or update one of the seller's customers",
  description:
    'Seller role, `customers` permission. An idempotent upsert under the client-chosen `id`: the body is the whole ' +
    'record, so an omitted `email` or `phone` is stored as null. Answers `201` with the customer both when it is ' +
    'created and on every later call; `updated_at` moves only when `name`, `email` or `phone` changed. ' +
    'A `tax_id` that differs from the stored one is `409 tax_id_immutable` (with `current_tax_id`); a tax id that ' +
    'another customer of the role already has is `409 duplicate_customer` (with that `customer_id`). The `id` is the ' +
    "company role's own: another role's customer with the same `id` is another customer. Invalid check digits, e-mail or phone are `400 invalid` with `errors` per field.",
  params: CustomerParams,
  headers: IdempotencyHeaders,
  body: withExamples(CustomerRequest, {
    zeta: { summary: 'A CNPJ customer, punctuation as typed', value: CUSTOMER_REQUEST },
    person: { summary: 'A CPF customer without e-mail or phone', value: { name: 'João da Silva', tax_id: '529.982.247-25' } },
  }),
  response: routeResponses(
    {
      201: replayable(
        jsonResponse('The customer as stored (created, updated or unchanged)', Customer, {
          zeta: { summary: 'Zeta saved for Acme seller', value: CUSTOMER },
        }),
      ),
    },
    [
      invalid(
        { tax_id: ['Not a valid CNPJ: the check digits do not match.'] },
        'A path id is not a UUID, or a field is malformed: `tax_id` check digits, `email`, `phone` (E.164)…',
      ),
      ...BODY_PROBLEMS,
      ...BEARER_PROBLEMS,
      when(Problems.permissionDenied, 'The membership lacks the `customers` permission'),
      when({ ...Problems.wrongRole, detail: 'This action is for a seller company role.' }, '`company_role_id` is a buyer role'),
      when(Problems.notFound, 'Not a member of `company_role_id`'),
      {
        status: 409,
        code: 'tax_id_immutable',
        detail: 'The tax_id of an existing customer cannot be changed.',
        when: 'The customer exists with another `tax_id`; `current_tax_id` is the stored one',
        extra: { current_tax_id: '11444777000161' },
      },
      {
        status: 409,
        code: 'duplicate_customer',
        detail: 'Another customer of this company role has this tax_id.',
        when: 'Another customer of the role has this `tax_id`; `customer_id` names it',
        extra: { customer_id: DEMO.customers.acmeCompany },
      },
      ...IDEMPOTENCY_PROBLEMS,
    ],
  ),
}

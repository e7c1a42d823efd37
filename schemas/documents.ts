import { Type, type Static } from '@sinclair/typebox'
import { KYC_CHECK_STATUSES, KYC_TYPES, KYC_VALIDITY_DAYS } from '../src/vocabulary.js'
import { DEMO } from '../db/seed/ids.js'
import { DateOnly, Nullable, OPTIONAL_BODY, StringEnum, Timestamp, Uuid } from './common.js'
import { ACME_CHECK_DOCUMENTS, SOLICITATION, SOLICITATION_REQUEST } from './examples.js'
import { IDEMPOTENCY_PROBLEMS, IdempotencyHeaders, replayable } from './idempotency.js'
import { BEARER_PROBLEMS, BODY_PROBLEMS, invalid, jsonResponse, Problems, routeResponses, when, withExample, withExamples } from './responses.js'

const validityList = KYC_TYPES.map((type) => {
  const days = KYC_VALIDITY_DAYS[type]
  return `\`${type}\` (${days === null ? 'no expiry' : `${days} days`})`
}).join(', ')

/** A plain enum, so that a wrong value gets one clear message rather than one per alternative. */
export const KycTypeName = StringEnum(KYC_TYPES, { description: `Required KYC type; validity from the issue date: ${validityList}` })

export const KycDocumentStatus = StringEnum(KYC_CHECK_STATUSES, {
  description: '`expired`: approved but `valid_until` is before today (UTC); `missing`: never sent',
})

export const KycDocumentRow = Type.Object({
  type: KycTypeName,
  status: KycDocumentStatus,
  document_id: Nullable(Uuid),
  valid_until: Nullable(DateOnly),
  updated_at: Nullable(Timestamp),
})

export const OpenSolicitationSummary = Type.Object(
  {
    id: Uuid,
    document_types: Type.Array(KycTypeName),
    due_date: Nullable(DateOnly),
    created_at: Timestamp,
  },
  { description: "The caller's open solicitation to this seller (route 5)" },
)

export const CheckDocumentsResponse = Type.Object({
  seller_id: Uuid,
  company: Type.Object({ name: Type.String(), tax_id: Type.String({ description: 'CNPJ, 14 characters without punctuation' }) }),
  complete: Type.Boolean({ description: 'Every required type approved and unexpired' }),
  documents: Type.Array(KycDocumentRow, { description: 'One row per required type, latest document of each' }),
  open_solicitation: Nullable(OpenSolicitationSummary),
})

const SellerId = Type.String({ format: 'uuid', description: 'Company role id of an active seller' })

export const CheckDocumentsParams = Type.Object({
  company_role_id: withExample(Uuid, DEMO.roles.betaBuyer),
  seller_id: withExample(SellerId, DEMO.roles.acmeSeller),
})

export const SOLICITATION_MESSAGE_MAX = 2000

export const SolicitationRequest = Type.Object({
  document_types: Type.Optional(
    Type.Array(KycTypeName, {
      minItems: 1,
      uniqueItems: true,
      description: 'Types to ask for; default: every type the check-documents route shows as not `approved`',
    }),
  ),
  message: Type.Optional(Nullable(Type.String({ maxLength: SOLICITATION_MESSAGE_MAX, description: 'Trimmed; empty is stored as null' }))),
  due_date: Type.Optional(Nullable(Type.String({ format: 'date', description: 'YYYY-MM-DD, today (UTC) or later' }))),
})
export type SolicitationRequest = Static<typeof SolicitationRequest>

export const SolicitationParams = Type.Object({
  version: withExample(Type.String({ description: 'API version; only `v1` exists' }), 'v1'),
  company_role_id: withExample(Uuid, DEMO.roles.betaBuyer),
  seller_id: withExample(SellerId, DEMO.roles.acmeSeller),
})

export const SolicitationResponse = Type.Object({
  id: Uuid,
  buyer_company_role_id: Uuid,
  seller_id: Uuid,
  document_types: Type.Array(KycTypeName, { description: 'In the order the check-documents route lists them' }),
  message: Nullable(Type.String()),
  due_date: Nullable(DateOnly),
  status: Type.Literal('open'),
  created_at: Timestamp,
})

const sellerNotFound = when(Problems.notFound, "Not a member of `company_role_id`, or `seller_id` is not an active seller's company role")

const buyerProblems = [
  ...BEARER_PROBLEMS,
  when(Problems.permissionDenied, 'The membership lacks the `documents` permission'),
  when(Problems.wrongRole, '`company_role_id` is a seller role'),
  sellerNotFound,
]

export const checkDocumentsRouteSchema = {
  operationId: 'checkSellerDocuments',
  tags: ['company'],
  summary: "A seller's KYC documents, as a buyer sees them",
  description:
    'Buyer role, `documents` permission. The latest document of each required type and its status, whether the set ' +
    "is complete, and the caller's open solicitation to this seller (or null).",
  params: CheckDocumentsParams,
  response: routeResponses(
    {
      200: jsonResponse("The seller's checklist", CheckDocumentsResponse, {
        acme: { summary: 'Beta buyer checks Acme seller: the balance sheet has expired', value: ACME_CHECK_DOCUMENTS },
      }),
    },
    [invalid({ seller_id: ['Must be a valid uuid.'] }, 'A path id is not a UUID'), ...buyerProblems],
  ),
}

export const solicitationRouteSchema = {
  [OPTIONAL_BODY]: true,
  operationId: 'requestSellerDocuments',
  tags: ['company'],
  summary: 'Ask a seller for KYC documents',
  description:
    'Buyer role, `documents` permission; `version` must be `v1` (else `404 unsupported_version`). Opens a solicitation ' +
    'for `document_types` (default: every type not approved, expired ones included). Explicit types are requested ' +
    'whatever their status. One open solicitation per buyer and seller. The body may be omitted (same as `{}`).',
  params: SolicitationParams,
  headers: IdempotencyHeaders,
  body: withExamples(SolicitationRequest, {
    balance_sheet: { summary: 'Ask Acme for its expired balance sheet', value: SOLICITATION_REQUEST },
    defaults: { summary: 'Ask for every type not approved', value: {} },
  }),
  response: routeResponses(
    {
      201: replayable(
        jsonResponse('The solicitation, open', SolicitationResponse, {
          balance_sheet: { summary: 'Beta buyer asked Acme seller for its balance sheet', value: SOLICITATION },
        }),
      ),
    },
    [
      invalid(
        { due_date: ['Must not be in the past.'] },
        'A path id is not a UUID, or a body field is malformed (`due_date` in the past, an unknown `document_types` entry…)',
      ),
      ...BODY_PROBLEMS,
      ...buyerProblems,
      {
        status: 404,
        code: 'unsupported_version',
        detail: 'Unsupported API version; this route exists in v1.',
        when: '`version` is not `v1`',
      },
      {
        status: 409,
        code: 'solicitation_already_open',
        detail: 'An open document solicitation to this seller already exists.',
        when: 'This buyer already has an open solicitation to this seller; `solicitation_id` names it',
        extra: { solicitation_id: SOLICITATION.id },
      },
      {
        status: 409,
        code: 'nothing_to_request',
        detail: 'Every required document of this seller is approved and valid.',
        when: 'No `document_types` given and every required type is approved',
      },
      ...IDEMPOTENCY_PROBLEMS,
    ],
  ),
}

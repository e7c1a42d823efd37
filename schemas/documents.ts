import { Type, type Static } from '@sinclair/typebox'
import { KYC_TYPES, KYC_VALIDITY_DAYS } from '../src/company/kyc-rules.js'
import type { KycType } from '../src/db/types.js'
import { DateOnly, Errors, Nullable, OPTIONAL_BODY, StringEnum, Timestamp, Uuid } from './common.js'

const validityList = KYC_TYPES.map((type) => {
  const days = KYC_VALIDITY_DAYS[type]
  return `\`${type}\` (${days === null ? 'no expiry' : `${days} days`})`
}).join(', ')

/** A plain enum, so that a wrong value gets one clear message rather than one per alternative. */
export const KycTypeName = Type.Unsafe<KycType>({
  type: 'string',
  enum: [...KYC_TYPES],
  description: `Required KYC type; validity from the issue date: ${validityList}`,
})

export const KycDocumentStatus = StringEnum(
  ['approved', 'pending_review', 'rejected', 'expired', 'missing'],
  { description: '`expired`: approved but `valid_until` is before today (UTC); `missing`: never sent' },
)

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

export const CheckDocumentsParams = Type.Object({
  company_role_id: Uuid,
  seller_id: Type.String({ format: 'uuid', description: 'Company role id of an active seller' }),
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
  message: Type.Optional(
    Nullable(Type.String({ maxLength: SOLICITATION_MESSAGE_MAX, description: 'Trimmed; empty is stored as null' })),
  ),
  due_date: Type.Optional(Nullable(Type.String({ format: 'date', description: 'YYYY-MM-DD, today (UTC) or later' }))),
})
export type SolicitationRequest = Static<typeof SolicitationRequest>

export const SolicitationParams = Type.Object({
  version: Type.String({ description: 'API version; only `v1` exists' }),
  company_role_id: Uuid,
  seller_id: Type.String({ format: 'uuid', description: 'Company role id of an active seller' }),
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

const sellerNotFound = Type.Ref('Problem', {
  description: "`not_found`: not a member of `company_role_id`, or `seller_id` is not an active seller's company role",
})

export const checkDocumentsRouteSchema = {
  tags: ['company'],
  summary: "A seller's KYC documents, as a buyer sees them",
  description:
    'Buyer role, `documents` permission. The latest document of each required type and its status, whether the set ' +
    'is complete, and the caller\'s open solicitation to this seller (or null).',
  params: CheckDocumentsParams,
  response: { 200: CheckDocumentsResponse, 400: Errors[400], 401: Errors[401], 403: Errors[403], 404: sellerNotFound, 503: Errors[503] },
}

export const solicitationRouteSchema = {
  [OPTIONAL_BODY]: true,
  tags: ['company'],
  summary: 'Ask a seller for KYC documents',
  description:
    'Buyer role, `documents` permission; `version` must be `v1` (else `404 unsupported_version`). Opens a solicitation ' +
    'for `document_types` (default: every type not approved, expired ones included). Explicit types are requested ' +
    'whatever their status. One open solicitation per buyer and seller. The body may be omitted (same as `{}`).',
  params: SolicitationParams,
  body: SolicitationRequest,
  response: {
    201: SolicitationResponse,
    400: Errors[400],
    401: Errors[401],
    403: Errors[403],
    404: Type.Ref('Problem', {
      description:
        "`unsupported_version`: `version` is not `v1`; `not_found`: not a member of `company_role_id`, or `seller_id` is not an active seller's company role",
    }),
    409: Type.Ref('Problem', {
      description:
        '`solicitation_already_open` (with `solicitation_id`, the open one), or `nothing_to_request` (every type approved and no `document_types` given)',
    }),
    413: Errors[413],
    415: Errors[415],
    503: Errors[503],
  },
}

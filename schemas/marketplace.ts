import { Type, type Static } from '@sinclair/typebox'
import { DEMO } from '../db/seed/ids.js'
import { ENVELOPE_STATUSES, SIGNER_STATUSES, TITLE_DOCUMENT_KINDS } from '../src/vocabulary.js'
import { Nullable, StringEnum, Timestamp, Uuid } from './common.js'
import { TITLE_1_DOCUMENTS } from './examples.js'
import { BEARER_PROBLEMS, invalid, jsonResponse, Problems, routeResponses, when, withExample } from './responses.js'

export const TitleDocumentsParams = Type.Object({
  company_role_id: withExample(Uuid, DEMO.roles.acmeSeller),
  title_id: withExample(Uuid, DEMO.titles.t1),
})
export type TitleDocumentsParams = Static<typeof TitleDocumentsParams>

export const TitleDocumentKind = StringEnum(TITLE_DOCUMENT_KINDS)

export const EnvelopeStatusName = StringEnum(ENVELOPE_STATUSES, {
  description: '`pending` until a final state; `signed`, `refused`, `cancelled` and `expired` never change again',
})

export const Signer = Type.Object({
  name: Type.String(),
  email: Type.String({ format: 'email' }),
  status: StringEnum(SIGNER_STATUSES),
  signed_at: Nullable(Timestamp),
})

export const Signature = Type.Object(
  {
    envelope_key: Type.String({ description: "The e-signature provider's document key" }),
    status: EnvelopeStatusName,
    completed_at: Nullable(Type.String({ format: 'date-time', description: 'When the envelope was completed (status `signed`)' })),
    signers: Type.Array(Signer, { description: 'In signing order' }),
  },
  { description: 'The e-signature envelope of the document, kept up to date by the provider webhook' },
)

export const TitleDocument = Type.Object({
  id: Uuid,
  kind: TitleDocumentKind,
  filename: Type.String(),
  content_type: Type.String({ description: 'Media type of the file' }),
  size_bytes: Type.Integer({ minimum: 0 }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the file' }),
  uploaded_at: Timestamp,
  signature: Nullable(Signature),
})
export const TitleDocuments = Type.Array(TitleDocument)

export const titleDocumentsRouteSchema = {
  operationId: 'listTitleDocuments',
  tags: ['marketplace'],
  summary: "A title's documents and their signature state",
  description:
    'Needs the `marketplace` permission on a role of either kind. The seller role of the title always sees it; ' +
    'a buyer role sees it while it is listed, or when that buyer has bid on it (a bid of any status) or bought it ' +
    '(an operation of that buyer). Anyone else gets `404`, as if the title did not exist. Documents are ordered by ' +
    '`uploaded_at`, then `id`; signers by their signing order.',
  params: TitleDocumentsParams,
  response: routeResponses(
    {
      200: jsonResponse('The documents of the title', TitleDocuments, {
        title1: { summary: 'Title 1 as Acme seller sees it: invoice, NF-e XML and a contract awaiting signatures', value: TITLE_1_DOCUMENTS },
      }),
    },
    [
      invalid({ title_id: ['Must be a valid uuid.'] }, 'A path id is not a UUID'),
      ...BEARER_PROBLEMS,
      when(Problems.permissionDenied, 'The membership lacks the `marketplace` permission'),
      when(Problems.notFound, "Not a member of `company_role_id`, or the title does not exist or is outside the role's reach"),
    ],
  ),
}

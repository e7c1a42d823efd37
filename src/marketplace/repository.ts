import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres'
import { Precompiled } from '../db/precompiled.js'
import { isoTimestamp } from '../db/sql-json.js'
import type { Database, Db, EnvelopeStatus, SignerStatus, TitleDocumentsTable } from '../db/types.js'
import { principalOf, userWithMembership, type PrincipalWithMembership, type ScopedPrincipal } from '../tenancy/principal.js'

type ScopedTables = 'users' | 'token_families' | 'memberships' | 'company_roles' | 'companies'

/**
 * Whether the caller's company role (the principal's membership, from the outer statement) may
 * see the title row in scope (§4 route 9): its seller role always; a buyer role while the title is
 * listed, or when that buyer has bid on it (any bid status: the buyer saw the documents when
 * bidding) or bought it (an operation of that buyer).
 */
function visibleToMember(eb: ExpressionBuilder<Database, ScopedTables | 'titles'>): Expression<SqlBool> {
  const memberRole = eb.ref('company_roles.id')
  return eb.or([
    eb('titles.seller_company_role_id', '=', memberRole),
    eb.and([
      eb('company_roles.role', '=', 'buyer'),
      eb.or([
        eb('titles.status', '=', 'listed'),
        eb.exists(
          eb
            .selectFrom('bids')
            .select(sql.lit(1).as('found'))
            .whereRef('bids.title_id', '=', 'titles.id')
            .whereRef('bids.buyer_company_role_id', '=', 'company_roles.id'),
        ),
        eb.exists(
          eb
            .selectFrom('operations')
            .select(sql.lit(1).as('found'))
            .whereRef('operations.title_id', '=', 'titles.id')
            .whereRef('operations.buyer_company_role_id', '=', 'company_roles.id'),
        ),
      ]),
    ]),
  ])
}

export interface Signer {
  name: string
  email: string
  status: SignerStatus
  signed_at: string | null
}

export interface Signature {
  envelope_key: string
  status: EnvelopeStatus
  completed_at: string | null
  signers: Signer[]
}

/** A document as route 9 shows it, built by the database (timestamps as RFC 3339 UTC text). */
export interface TitleDocument {
  id: string
  kind: TitleDocumentsTable['kind']
  filename: string
  content_type: string
  size_bytes: number
  sha256: string
  uploaded_at: string
  signature: Signature | null
}

/** The envelope of the document in scope with its signers in signing order, as one JSON object (null without one). */
function signatureOf(eb: ExpressionBuilder<Database, 'title_documents'>) {
  return jsonObjectFrom(
    eb
      .selectFrom('signature_envelopes')
      .select((envelope) => [
        'signature_envelopes.envelope_key',
        'signature_envelopes.status',
        isoTimestamp(envelope.ref('signature_envelopes.completed_at')).as('completed_at'),
        jsonArrayFrom(
          envelope
            .selectFrom('signature_signers')
            .select((signer) => [
              'signature_signers.name',
              'signature_signers.email',
              'signature_signers.status',
              isoTimestamp(signer.ref('signature_signers.signed_at')).as('signed_at'),
            ])
            .whereRef('signature_signers.envelope_id', '=', 'signature_envelopes.id')
            .orderBy('signature_signers.position')
            .orderBy('signature_signers.id'),
        ).as('signers'),
      ])
      .whereRef('signature_envelopes.title_document_id', '=', 'title_documents.id'),
  )
}

/**
 * The title's id, if the member may see it: a lateral subquery of a statement that starts from the
 * principal and their membership (src/tenancy/principal.ts), run only for a member. One row, or none.
 */
function visibleTitle(eb: ExpressionBuilder<Database, ScopedTables>, titleId: string) {
  return eb
    .selectFrom('titles')
    .select('titles.id')
    .where('companies.id', 'is not', null)
    .where('titles.id', '=', titleId)
    .where(visibleToMember)
    .as('title')
}

/**
 * Route 9 in one statement: the principal, their membership, and the title's documents if visible,
 * in upload order, as the JSON text of the response body (`TitleDocument[]`): the service sends it
 * as it comes, instead of parsing it into objects only to serialise them again. The documents are
 * built outside the visibility subquery and only once it found the title: inside it, PostgreSQL
 * evaluated them before the visibility check, so a 404 paid for the whole body.
 */
const titleDocumentsStatement = new Precompiled((db, p: ScopedPrincipal & { titleId: string }) =>
  userWithMembership(db, p)
    .leftJoinLateral((eb) => visibleTitle(eb, p.titleId), (join) => join.onTrue())
    .select((eb) => {
      const documents = jsonArrayFrom(
        eb
          .selectFrom('title_documents')
          .select((document) => [
            'title_documents.id',
            'title_documents.kind',
            'title_documents.filename',
            'title_documents.content_type',
            'title_documents.size_bytes',
            'title_documents.sha256',
            isoTimestamp(document.ref('title_documents.uploaded_at')).as('uploaded_at'),
            signatureOf(document).as('signature'),
          ])
          .whereRef('title_documents.title_id', '=', 'title.id')
          .orderBy('title_documents.uploaded_at')
          .orderBy('title_documents.id'),
      )
      return [
        'title.id as visible_title_id',
        sql<string | null>`CASE WHEN ${eb.ref('title.id')} IS NOT NULL THEN (${documents})::text END`.as('documents_json'),
      ]
    }),
)

export interface ScopedTitleDocuments {
  /** Undefined when the token's user is not active. */
  principal: PrincipalWithMembership | undefined
  /** JSON text of `TitleDocument[]`; undefined when the title does not exist or the member may not see it. */
  documentsJson: string | undefined
}

export async function findScopedTitleDocuments(db: Db, key: ScopedPrincipal, titleId: string): Promise<ScopedTitleDocuments> {
  const row = await titleDocumentsStatement.first(db, { ...key, titleId })
  if (!row) return { principal: undefined, documentsJson: undefined }
  const { visible_title_id: visibleTitleId, documents_json: documentsJson } = row
  return { principal: principalOf(row), documentsJson: visibleTitleId !== null && documentsJson !== null ? documentsJson : undefined }
}

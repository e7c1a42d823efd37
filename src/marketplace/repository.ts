import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import { jsonArrayFrom } from 'kysely/helpers/postgres'
import type { Database, Db, EnvelopeStatus, RoleKind, SignerStatus, TitleDocumentsTable } from '../db/types.js'

/** The company role looking at a title. */
export interface TitleViewer {
  companyRoleId: string
  role: RoleKind
}

/**
 * Whether the viewer may see the title row in scope (§4 route 9): its seller role always; a buyer
 * role while the title is listed, or when that buyer has bid on it (any bid status: the buyer saw
 * the documents when bidding) or bought it (an operation of that buyer).
 */
function visibleTo(eb: ExpressionBuilder<Database, 'titles'>, viewer: TitleViewer): Expression<SqlBool> {
  const seller = eb('titles.seller_company_role_id', '=', viewer.companyRoleId)
  if (viewer.role !== 'buyer') return seller
  return eb.or([
    seller,
    eb('titles.status', '=', 'listed'),
    eb.exists(
      eb
        .selectFrom('bids')
        .select(sql.lit(1).as('found'))
        .whereRef('bids.title_id', '=', 'titles.id')
        .where('bids.buyer_company_role_id', '=', viewer.companyRoleId),
    ),
    eb.exists(
      eb
        .selectFrom('operations')
        .select(sql.lit(1).as('found'))
        .whereRef('operations.title_id', '=', 'titles.id')
        .where('operations.buyer_company_role_id', '=', viewer.companyRoleId),
    ),
  ])
}

export interface SignerRow {
  name: string
  email: string
  status: SignerStatus
  /** RFC 3339 UTC, formatted by the database (it travels inside JSON). */
  signed_at: string | null
}

export interface TitleDocumentRow {
  id: string
  kind: TitleDocumentsTable['kind']
  filename: string
  content_type: string
  size_bytes: number
  sha256: string
  uploaded_at: Date
  envelope_key: string | null
  envelope_status: EnvelopeStatus | null
  completed_at: Date | null
  signers: SignerRow[]
}

/**
 * The documents of a title the viewer may see, with their envelope and signers (a JSON array
 * ordered by position), in one statement; undefined when the title is not visible. The title is
 * left-joined to its documents, so a visible title without documents is one row with no document.
 */
export async function findVisibleTitleDocuments(db: Db, titleId: string, viewer: TitleViewer): Promise<TitleDocumentRow[] | undefined> {
  const rows = await db
    .selectFrom('titles')
    .leftJoin('title_documents', 'title_documents.title_id', 'titles.id')
    .leftJoin('signature_envelopes', 'signature_envelopes.title_document_id', 'title_documents.id')
    .select((eb) => [
      'title_documents.id',
      'title_documents.kind',
      'title_documents.filename',
      'title_documents.content_type',
      'title_documents.size_bytes',
      'title_documents.sha256',
      'title_documents.uploaded_at',
      'signature_envelopes.envelope_key',
      'signature_envelopes.status as envelope_status',
      'signature_envelopes.completed_at',
      jsonArrayFrom(
        eb
          .selectFrom('signature_signers')
          .select([
            'signature_signers.name',
            'signature_signers.email',
            'signature_signers.status',
            sql<string | null>`to_char(signature_signers.signed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`.as(
              'signed_at',
            ),
          ])
          .whereRef('signature_signers.envelope_id', '=', 'signature_envelopes.id')
          .orderBy('signature_signers.position')
          .orderBy('signature_signers.id'),
      ).as('signers'),
    ])
    .where('titles.id', '=', titleId)
    .where((eb) => visibleTo(eb, viewer))
    .orderBy('title_documents.uploaded_at')
    .orderBy('title_documents.id')
    .execute()
  if (rows.length === 0) return undefined
  // A row with a document id has all of the document's columns: they are NOT NULL.
  const hasDocument = (row: (typeof rows)[number]): row is (typeof rows)[number] & TitleDocumentRow => row.id !== null
  return rows.filter(hasDocument)
}

import { sql } from 'kysely'
import { jsonArrayFrom } from 'kysely/helpers/postgres'
import type { Db, EnvelopeStatus, RoleKind, SignerStatus, TitleDocumentsTable } from '../db/types.js'

/** The company role looking at a title. */
export interface TitleViewer {
  companyRoleId: string
  role: RoleKind
}

/**
 * Whether the viewer may see the title (§4 route 9), decided in one query: its seller role always;
 * a buyer role while the title is listed, or when that buyer has bid on it (any bid status: the
 * buyer saw the documents when bidding) or bought it (an operation of that buyer).
 */
export async function isTitleVisibleTo(db: Db, titleId: string, viewer: TitleViewer): Promise<boolean> {
  const row = await db
    .selectFrom('titles')
    .select('titles.id')
    .where('titles.id', '=', titleId)
    .where((eb) =>
      eb.or([
        eb('titles.seller_company_role_id', '=', viewer.companyRoleId),
        ...(viewer.role === 'buyer'
          ? [
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
            ]
          : []),
      ]),
    )
    .executeTakeFirst()
  return row !== undefined
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
 * The title's documents with their envelope and signers, in one round trip: the signers of each
 * envelope come as a JSON array ordered by position.
 */
export function listTitleDocuments(db: Db, titleId: string): Promise<TitleDocumentRow[]> {
  return db
    .selectFrom('title_documents')
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
    .where('title_documents.title_id', '=', titleId)
    .orderBy('title_documents.uploaded_at')
    .orderBy('title_documents.id')
    .execute()
}

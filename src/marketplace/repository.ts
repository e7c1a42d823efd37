import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely'
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres'
import { isoTimestamp } from '../db/sql-json.js'
import type { Database } from '../../db/types.js'
import type { MemberRole, Scope } from '../tenancy/scoped-statement.js'

/**
 * Whether the caller's company role (`member`, from the scoped statement) may see the title row in
 * scope (§4 route 9): its seller role always; a buyer role while the title is listed, or when that
 * buyer has bid on it (any bid status: the buyer saw the documents when bidding) or bought it (an
 * operation of that buyer).
 */
function visibleToMember(eb: ExpressionBuilder<Database, 'titles'>, member: MemberRole): Expression<SqlBool> {
  const memberRole = member.id
  return eb.or([
    eb('titles.seller_company_role_id', '=', memberRole),
    eb.and([
      eb(member.role, '=', 'buyer'),
      eb.or([
        eb('titles.status', '=', 'listed'),
        eb.exists(
          eb
            .selectFrom('bids')
            .select(sql.lit(1).as('found'))
            .whereRef('bids.title_id', '=', 'titles.id')
            .where('bids.buyer_company_role_id', '=', memberRole),
        ),
        eb.exists(
          eb
            .selectFrom('operations')
            .select(sql.lit(1).as('found'))
            .whereRef('operations.title_id', '=', 'titles.id')
            .where('operations.buyer_company_role_id', '=', memberRole),
        ),
      ]),
    ]),
  ])
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
 * The title, if the member may see it, with its documents in upload order as the JSON text of the
 * response body (`TitleDocument[]`), built by the database: the service sends it as it comes,
 * instead of parsing it into objects only to serialise them again. One row, or none.
 */
function visibleTitleDocuments(db: Kysely<Database>, titleId: string, member: MemberRole) {
  return (
    db
      .selectFrom('titles')
      .select((title) => [
        sql<string>`${jsonArrayFrom(
          title
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
            .whereRef('title_documents.title_id', '=', 'titles.id')
            .orderBy('title_documents.uploaded_at')
            .orderBy('title_documents.id'),
        )}::text`.as('documents_json'),
      ])
      .where('titles.id', '=', titleId)
      .where((eb) => visibleToMember(eb, member))
      // A fence: pulled up into the statement's join, the subquery had its documents built at the
      // title's scan, before the visibility filter on the join, so a 404 paid for the whole body.
      .offset(0)
  )
}

/** Route 9's data query: the title's documents, if the member may see it. */
export const titleDocumentsRead = (db: Kysely<Database>, scope: Scope<{ title_id: string }>) =>
  visibleTitleDocuments(db, scope.params.title_id, scope.member)

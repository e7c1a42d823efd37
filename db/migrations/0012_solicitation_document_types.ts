import { sql, type Kysely } from 'kysely'

/**
 * A solicitation's document types are KYC types (src/vocabulary.ts KYC_TYPES), as route 5's schema
 * requires and `kyc_documents.type` already checks: the column had only its non-empty check, so a
 * row written around the route could name a type route 7 never lists. The list is spelled here, not
 * imported, so that the migration keeps its meaning; test/platform/vocabulary.test.ts holds it to
 * the vocabulary. Validated at once: the table holds about one row per buyer and seller pair asking
 * (100,000 at production volume, db/seed/volume.ts), a scan of well under a second.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE document_solicitations
      ADD CONSTRAINT document_solicitations_document_types_kyc_check
        CHECK (document_types <@ ARRAY['articles_of_association', 'cnpj_card', 'partners_identification', 'proof_of_address',
          'balance_sheet', 'income_statement', 'revenue_statement', 'debt_clearance_certificate'])`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE document_solicitations DROP CONSTRAINT document_solicitations_document_types_kyc_check`.execute(db)
}

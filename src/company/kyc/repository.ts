import { sql, type Kysely } from 'kysely'
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres'
import { Precompiled } from '../../db/precompiled.js'
import { isoTimestamp } from '../../db/sql-json.js'
import type { Database, Db } from '../../../db/types.js'
import { KYC_TYPES, type KycType } from '../../vocabulary.js'
import type { Scope } from '../../tenancy/scoped-statement.js'
import type { LatestKycDocument } from './status.js'

/** The open solicitation from one buyer to one seller, as route 7 shows it. */
export interface OpenSolicitation {
  id: string
  document_types: KycType[]
  due_date: string | null
  /** RFC 3339 UTC. */
  created_at: string
}

/** What routes 5 and 7 need to know about a seller, read in one round trip. */
export interface SellerKyc {
  company: { name: string; tax_id: string }
  /** The latest document of each type the company has (types it never sent are absent). */
  documents: LatestKycDocument[]
  /** The buyer's open solicitation to this seller, if any. */
  openSolicitation: OpenSolicitation | null
}

/**
 * The active seller role `sellerRoleId` of an active company, with the buyer's open solicitation
 * and the company's latest KYC document per type (DISTINCT ON over the (company_id, type,
 * updated_at DESC) index), both as JSON built by the database: one row, or none when
 * `sellerRoleId` is not an active seller role.
 */
function sellerKycRow(db: Kysely<Database>, buyerRoleId: string, sellerRoleId: string) {
  return db
    .selectFrom('company_roles as seller')
    .innerJoin('companies as seller_company', 'seller_company.id', 'seller.company_id')
    .select((eb) => [
      'seller_company.name',
      'seller_company.tax_id',
      jsonObjectFrom(
        eb
          .selectFrom('document_solicitations as open')
          .select((open) => ['open.id', 'open.document_types', 'open.due_date', isoTimestamp(open.ref('open.created_at')).as('created_at')])
          .whereRef('open.seller_company_role_id', '=', 'seller.id')
          .where('open.buyer_company_role_id', '=', buyerRoleId)
          .where('open.status', '=', 'open'),
      ).as('open_solicitation'),
      jsonArrayFrom(
        eb
          .selectFrom('kyc_documents')
          .distinctOn('kyc_documents.type')
          .select((document) => [
            'kyc_documents.id',
            'kyc_documents.type',
            'kyc_documents.status',
            'kyc_documents.valid_until',
            isoTimestamp(document.ref('kyc_documents.updated_at')).as('updated_at'),
          ])
          .whereRef('kyc_documents.company_id', '=', 'seller_company.id')
          .orderBy('kyc_documents.type')
          .orderBy('kyc_documents.updated_at', 'desc')
          .orderBy('kyc_documents.created_at', 'desc')
          .orderBy('kyc_documents.id', 'desc'),
      ).as('documents'),
    ])
    .where('seller.id', '=', sellerRoleId)
    .where('seller.role', '=', 'seller')
    .where('seller.is_active', '=', true)
    .where('seller_company.is_active', '=', true)
}

interface SellerKycRow {
  name: string | null
  tax_id: string | null
  open_solicitation: OpenSolicitation | null
  documents: LatestKycDocument[] | null
}

export function toSellerKyc(row: SellerKycRow | undefined): SellerKyc | undefined {
  if (!row || row.name === null || row.tax_id === null) return undefined
  return { company: { name: row.name, tax_id: row.tax_id }, documents: row.documents ?? [], openSolicitation: row.open_solicitation }
}

/** Route 5's data query: the seller's KYC as the buyer in `{company_role_id}` sees it (read with `toSellerKyc`). */
export const sellerKycRead = (db: Kysely<Database>, scope: Scope<{ seller_id: string }>) =>
  sellerKycRow(db, scope.companyRoleId, scope.params.seller_id)

/** The required types in the order route 7 lists them, as SQL literals (the vocabulary is the one list). */
const REQUIRED_TYPES = sql.join(KYC_TYPES.map((type) => sql.lit(type)))

/**
 * Route 7's whole answer as JSON text built by the database, sent as is (as route 9's): parsing the
 * documents into objects, the checklist and its serialisation cost the service more CPU per request
 * than the rest of the route beyond its SQL (issue 36). The latest document of each required type
 * through the (company_id, type, updated_at DESC) index, and its status by kycChecklist's rule
 * (./status.ts, which route 5 keeps): missing, expired (approved, valid_until before today, UTC),
 * else its review status. test/company/documents-check.test.ts holds the two to the same answers.
 */
function sellerChecklistRow(db: Kysely<Database>, buyerRoleId: string, sellerRoleId: string) {
  return db
    .selectFrom('company_roles as seller')
    .innerJoin('companies as seller_company', 'seller_company.id', 'seller.company_id')
    .innerJoinLateral(
      sql<{ documents: unknown; complete: boolean }>`(
        SELECT json_agg(json_build_object('type', checked.type, 'status', checked.status, 'document_id', checked.id,
                 'valid_until', checked.valid_until, 'updated_at', ${isoTimestamp(sql.ref('checked.updated_at'))}) ORDER BY checked.position) AS documents,
               bool_and(checked.status = 'approved') AS complete
        FROM (
          SELECT required.type, required.position, latest.id, latest.valid_until, latest.updated_at,
                 CASE WHEN latest.id IS NULL THEN 'missing'
                      WHEN latest.status = 'approved' AND latest.valid_until < (now() AT TIME ZONE 'UTC')::date THEN 'expired'
                      ELSE latest.status END AS status
          FROM unnest(ARRAY[${REQUIRED_TYPES}]::text[]) WITH ORDINALITY AS required (type, position)
          LEFT JOIN LATERAL (
            SELECT id, status, valid_until, updated_at FROM kyc_documents
            WHERE kyc_documents.company_id = seller_company.id AND kyc_documents.type = required.type
            ORDER BY updated_at DESC, created_at DESC, id DESC
            LIMIT 1
          ) AS latest ON true
        ) AS checked
      )`.as('checklist'),
      (join) => join.onTrue(),
    )
    .select((eb) =>
      sql<string>`json_build_object(
        'seller_id', seller.id,
        'company', json_build_object('name', seller_company.name, 'tax_id', seller_company.tax_id),
        'complete', checklist.complete,
        'documents', checklist.documents,
        'open_solicitation', ${eb
          .selectFrom('document_solicitations as open')
          .select((open) =>
            sql<unknown>`json_build_object('id', open.id, 'document_types', open.document_types, 'due_date', open.due_date,
              'created_at', ${isoTimestamp(open.ref('open.created_at'))})`.as('open_solicitation'),
          )
          .whereRef('open.seller_company_role_id', '=', 'seller.id')
          .where('open.buyer_company_role_id', '=', buyerRoleId)
          .where('open.status', '=', 'open')}
      )::text`.as('body_json'),
    )
    .where('seller.id', '=', sellerRoleId)
    .where('seller.role', '=', 'seller')
    .where('seller.is_active', '=', true)
    .where('seller_company.is_active', '=', true)
}

/** Route 7's data query: the seller's checklist as the buyer in `{company_role_id}` sees it, the answer's JSON text. */
export const sellerChecklistRead = (db: Kysely<Database>, scope: Scope<{ seller_id: string }>) =>
  sellerChecklistRow(db, scope.companyRoleId, scope.params.seller_id)

export interface NewSolicitation {
  buyerRoleId: string
  sellerRoleId: string
  documentTypes: KycType[]
  message: string | null
  dueDate: string | null
  createdBy: string
}

export interface Solicitation {
  id: string
  buyer_company_role_id: string
  seller_company_role_id: string
  document_types: KycType[]
  message: string | null
  due_date: string | null
  status: 'open' | 'fulfilled' | 'cancelled'
  created_at: Date
}

export type OpenSolicitationOutcome = { created: Solicitation } | { alreadyOpen: string }

/**
 * The insert, or nothing when this buyer has an open solicitation to this seller: the partial
 * unique index (document_solicitations_one_open_idx) is the arbiter, so a concurrent request waits
 * for the first and then inserts nothing, without an error that would abort a surrounding
 * transaction (a keyed request's, src/idempotency/).
 */
const insertOpenStatement = new Precompiled((db, p: NewSolicitation) =>
  db
    .insertInto('document_solicitations')
    .values({
      buyer_company_role_id: p.buyerRoleId,
      seller_company_role_id: p.sellerRoleId,
      document_types: p.documentTypes,
      message: p.message,
      due_date: p.dueDate,
      created_by: p.createdBy,
    })
    .onConflict((conflict) => conflict.columns(['buyer_company_role_id', 'seller_company_role_id']).where('status', '=', 'open').doNothing())
    .returning(['id', 'buyer_company_role_id', 'seller_company_role_id', 'document_types', 'message', 'due_date', 'status', 'created_at']),
)

/** Attempts before giving up on a solicitation closed again each time between the insert and the look-up. */
const ATTEMPTS = 3

/** Opens a solicitation, or names the open one that prevents it (after its request committed). */
export async function insertOpenSolicitation(db: Db, values: NewSolicitation): Promise<OpenSolicitationOutcome> {
  for (let attempt = 1; ; attempt++) {
    const created = await insertOpenStatement.first(db, values)
    if (created) return { created }
    const open = await findOpenSolicitationId(db, values.buyerRoleId, values.sellerRoleId)
    if (open !== undefined) return { alreadyOpen: open }
    // Closed again in the instant between the two statements: try to open it once more.
    if (attempt === ATTEMPTS) throw new Error('document solicitation: the open one kept closing between the insert and its look-up')
  }
}

const openSolicitationIdStatement = new Precompiled((db, p: { buyerRoleId: string; sellerRoleId: string }) =>
  db
    .selectFrom('document_solicitations')
    .select('id')
    .where('buyer_company_role_id', '=', p.buyerRoleId)
    .where('seller_company_role_id', '=', p.sellerRoleId)
    .where('status', '=', 'open'),
)

export async function findOpenSolicitationId(db: Db, buyerRoleId: string, sellerRoleId: string): Promise<string | undefined> {
  return (await openSolicitationIdStatement.first(db, { buyerRoleId, sellerRoleId }))?.id
}

import type { Kysely } from 'kysely'
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres'
import { Precompiled } from '../../db/precompiled.js'
import { isoTimestamp } from '../../db/sql-json.js'
import type { Database, Db } from '../../../db/types.js'
import type { KycType } from '../../vocabulary.js'
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

/** Routes 5 and 7's data query: the seller's KYC as the buyer in `{company_role_id}` sees it (read with `toSellerKyc`). */
export const sellerKycRead = (db: Kysely<Database>, scope: Scope<{ seller_id: string }>) =>
  sellerKycRow(db, scope.companyRoleId, scope.params.seller_id)

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

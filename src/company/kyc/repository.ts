import type { Kysely } from 'kysely'
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres'
import { uniqueViolation } from '../../db/errors.js'
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

const sellerKycStatement = new Precompiled((db, p: { buyerRoleId: string; sellerRoleId: string }) => sellerKycRow(db, p.buyerRoleId, p.sellerRoleId))

/** What routes 5 and 7 need to know about a seller, in one round trip; undefined when not an active seller role. */
export async function loadSellerKyc(db: Db, buyerRoleId: string, sellerRoleId: string): Promise<SellerKyc | undefined> {
  return toSellerKyc(await sellerKycStatement.first(db, { buyerRoleId, sellerRoleId }))
}

/** Route 7's data query: the seller's KYC as the buyer in `{company_role_id}` sees it (read with `toSellerKyc`). */
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

/** The name of the partial unique index that allows one open solicitation per buyer and seller. */
const ONE_OPEN_INDEX = 'document_solicitations_one_open_idx'

export type OpenSolicitationOutcome = { created: Solicitation } | { alreadyOpen: string }

/**
 * Opens a solicitation. The partial unique index decides between concurrent requests: the loser's
 * insert fails (after the winner commits) and gets the winner's id instead.
 */
export async function insertOpenSolicitation(db: Db, values: NewSolicitation): Promise<OpenSolicitationOutcome> {
  try {
    const created = await db
      .insertInto('document_solicitations')
      .values({
        buyer_company_role_id: values.buyerRoleId,
        seller_company_role_id: values.sellerRoleId,
        document_types: values.documentTypes,
        message: values.message,
        due_date: values.dueDate,
        created_by: values.createdBy,
      })
      .returning(['id', 'buyer_company_role_id', 'seller_company_role_id', 'document_types', 'message', 'due_date', 'status', 'created_at'])
      .executeTakeFirstOrThrow()
    return { created }
  } catch (error) {
    if (uniqueViolation(error) !== ONE_OPEN_INDEX) throw error
    const open = await findOpenSolicitationId(db, values.buyerRoleId, values.sellerRoleId)
    // Closed again in the instant between the two statements: nothing sensible to point at.
    if (open === undefined) throw error
    return { alreadyOpen: open }
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

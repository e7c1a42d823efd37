import { uniqueViolation } from '../db/errors.js'
import type { Db, KycType } from '../db/types.js'
import type { LatestKycDocument } from './kyc-status.js'

/** The open solicitation from one buyer to one seller, as route 7 shows it. */
export interface OpenSolicitation {
  id: string
  document_types: KycType[]
  due_date: string | null
  created_at: Date
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
 * The active seller role `sellerRoleId` of an active company, its latest KYC document per type
 * (DISTINCT ON over the (company_id, type, updated_at DESC) index) and the buyer's open
 * solicitation, in one query: one row per latest document, or one row with no document.
 * Undefined when `sellerRoleId` is not an active seller role.
 */
export async function loadSellerKyc(db: Db, buyerRoleId: string, sellerRoleId: string): Promise<SellerKyc | undefined> {
  const rows = await db
    .selectFrom('company_roles as seller')
    .innerJoin('companies', 'companies.id', 'seller.company_id')
    .leftJoin('document_solicitations as open', (join) =>
      join
        .onRef('open.seller_company_role_id', '=', 'seller.id')
        .on('open.buyer_company_role_id', '=', buyerRoleId)
        .on('open.status', '=', 'open'),
    )
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('kyc_documents')
          .distinctOn('kyc_documents.type')
          .select([
            'kyc_documents.id',
            'kyc_documents.type',
            'kyc_documents.status',
            'kyc_documents.valid_until',
            'kyc_documents.updated_at',
          ])
          .whereRef('kyc_documents.company_id', '=', 'companies.id')
          .orderBy('kyc_documents.type')
          .orderBy('kyc_documents.updated_at', 'desc')
          .orderBy('kyc_documents.created_at', 'desc')
          .orderBy('kyc_documents.id', 'desc')
          .as('latest'),
      (join) => join.onTrue(),
    )
    .select([
      'companies.name',
      'companies.tax_id',
      'open.id as open_id',
      'open.document_types as open_document_types',
      'open.due_date as open_due_date',
      'open.created_at as open_created_at',
      'latest.id as document_id',
      'latest.type',
      'latest.status',
      'latest.valid_until',
      'latest.updated_at',
    ])
    .where('seller.id', '=', sellerRoleId)
    .where('seller.role', '=', 'seller')
    .where('seller.is_active', '=', true)
    .where('companies.is_active', '=', true)
    .execute()
  const first = rows[0]
  if (!first) return undefined
  const documents: LatestKycDocument[] = []
  for (const row of rows) {
    if (row.document_id === null || row.type === null || row.status === null || row.updated_at === null) continue
    documents.push({ id: row.document_id, type: row.type, status: row.status, valid_until: row.valid_until, updated_at: row.updated_at })
  }
  const openSolicitation =
    first.open_id === null || first.open_document_types === null || first.open_created_at === null
      ? null
      : { id: first.open_id, document_types: first.open_document_types, due_date: first.open_due_date, created_at: first.open_created_at }
  return { company: { name: first.name, tax_id: first.tax_id }, documents, openSolicitation }
}

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
      .returning([
        'id',
        'buyer_company_role_id',
        'seller_company_role_id',
        'document_types',
        'message',
        'due_date',
        'status',
        'created_at',
      ])
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

export async function findOpenSolicitationId(db: Db, buyerRoleId: string, sellerRoleId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('document_solicitations')
    .select('id')
    .where('buyer_company_role_id', '=', buyerRoleId)
    .where('seller_company_role_id', '=', sellerRoleId)
    .where('status', '=', 'open')
    .executeTakeFirst()
  return row?.id
}

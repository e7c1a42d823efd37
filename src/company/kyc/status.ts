import type { KycDocumentsTable } from '../../../db/types.js'
import { KYC_TYPES, type KycCheckStatus, type KycType } from '../../vocabulary.js'

/** The latest document of one type for a company, as the repository reads it. */
export interface LatestKycDocument {
  id: string
  type: KycType
  status: KycDocumentsTable['status']
  valid_until: string | null
  /** RFC 3339 UTC. */
  updated_at: string
}

export interface KycChecklistRow {
  type: KycType
  status: KycCheckStatus
  document_id: string | null
  valid_until: string | null
  updated_at: string | null
}

export interface KycChecklist {
  /** Every required type approved and unexpired. */
  complete: boolean
  /** One row per required type, in the order of KYC_TYPES. */
  documents: KycChecklistRow[]
}

/** Today's date in UTC (`YYYY-MM-DD`); the API's dates, like its timestamps, are UTC. */
export const utcToday = (now: Date): string => now.toISOString().slice(0, 10)

/** A document is valid through its `valid_until` day; only an approved one can expire. */
export function documentStatus(document: LatestKycDocument | undefined, today: string): KycCheckStatus {
  if (!document) return 'missing'
  if (document.status === 'approved' && document.valid_until !== null && document.valid_until < today) return 'expired'
  return document.status
}

/** Route 7's rows and verdict from the latest document of each type. */
export function kycChecklist(latest: readonly LatestKycDocument[], today: string): KycChecklist {
  const byType = new Map(latest.map((document) => [document.type, document]))
  const documents = KYC_TYPES.map((type): KycChecklistRow => {
    const document = byType.get(type)
    return {
      type,
      status: documentStatus(document, today),
      document_id: document?.id ?? null,
      valid_until: document?.valid_until ?? null,
      updated_at: document?.updated_at ?? null,
    }
  })
  return { complete: documents.every((row) => row.status === 'approved'), documents }
}

/** Route 5's default request: every type the checklist does not show as approved (expired included). */
export const typesNotApproved = (checklist: KycChecklist): KycType[] =>
  checklist.documents.filter((row) => row.status !== 'approved').map((row) => row.type)

/** The requested types in the order route 7 lists them, so that stored requests read the same way. */
export const inChecklistOrder = (types: readonly KycType[]): KycType[] => KYC_TYPES.filter((type) => types.includes(type))

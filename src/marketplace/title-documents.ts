import type { Db, EnvelopeStatus } from '../db/types.js'
import { problem } from '../lib/problem.js'
import { findVisibleTitleDocuments, type SignerRow, type TitleDocumentRow, type TitleViewer } from './repository.js'

export interface Signature {
  envelope_key: string
  status: EnvelopeStatus
  completed_at: Date | null
  signers: SignerRow[]
}

/** A document as route 9 shows it: the row, with its envelope folded into `signature`. */
export type TitleDocument = Omit<TitleDocumentRow, 'envelope_key' | 'envelope_status' | 'completed_at' | 'signers'> & {
  signature: Signature | null
}

export function toTitleDocument(row: TitleDocumentRow): TitleDocument {
  const { envelope_key: envelopeKey, envelope_status: status, completed_at: completedAt, signers, ...document } = row
  const signature = envelopeKey !== null && status !== null ? { envelope_key: envelopeKey, status, completed_at: completedAt, signers } : null
  return { ...document, signature }
}

/** Route 9: the documents of a title the viewer may see; any other title is 404, as if it did not exist. */
export async function titleDocumentsFor(db: Db, viewer: TitleViewer, titleId: string): Promise<TitleDocument[]> {
  const rows = await findVisibleTitleDocuments(db, titleId, viewer)
  if (!rows) throw problem(404, 'not_found', 'Not found.')
  return rows.map(toTitleDocument)
}

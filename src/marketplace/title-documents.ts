import type { FastifyRequest } from 'fastify'
import type { Db } from '../db/types.js'
import { problem } from '../lib/problem.js'
import { admitMember } from '../tenancy/plugin.js'
import { scopedPrincipalKey } from '../tenancy/principal.js'
import { findScopedTitleDocuments } from './repository.js'

/**
 * Route 9: the documents of a title the caller's company role may see, read with the caller's
 * principal and membership in one statement; any other title is 404, as if it did not exist.
 * Returns the response body, `TitleDocument[]` as JSON text built by the database.
 */
export async function titleDocumentsJsonFor(db: Db, request: FastifyRequest, titleId: string): Promise<string> {
  const { principal, documentsJson } = await findScopedTitleDocuments(db, scopedPrincipalKey(request), titleId)
  await admitMember(request, principal)
  if (documentsJson === undefined) throw problem(404, 'not_found', 'Not found.')
  return documentsJson
}

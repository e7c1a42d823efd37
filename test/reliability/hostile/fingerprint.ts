import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { Database } from '../../../db/types.js'

/**
 * Tables a rejected request may still change, and why that is right:
 * - company_role_presence: every authenticated request that passes the membership check marks its
 *   company role seen (docs/api.md §4 route 6), even when the route then answers 404 or 409 for
 *   the resource it names. That is activity by a member, which is what presence reports.
 *   Requests rejected before the membership check (401, 400 from the schemas, 403, 404 for a
 *   non-member) never reach the mark.
 */
export const VOLATILE_TABLES = new Set(['company_role_presence'])

/** Every table of the data model; the fingerprint refuses to run on a schema that lacks one. */
const EXPECTED_TABLES = [
  'users',
  'companies',
  'company_roles',
  'memberships',
  'token_families',
  'kyc_documents',
  'document_solicitations',
  'bank_accounts',
  'customers',
  'chat_conversations',
  'titles',
  'bids',
  'operations',
  'title_documents',
  'signature_envelopes',
  'signature_signers',
  'webhook_deliveries',
]

export type Fingerprint = Record<string, string>

/**
 * One query that hashes every row of every table of the current schema (rows as text, ordered), one
 * hash per table so that a difference names the table. Built once per database: the table list is
 * read from the catalogue, so a table added later is covered without editing this file.
 */
export async function fingerprinter(db: Kysely<Database>): Promise<() => Promise<Fingerprint>> {
  const { rows } = await sql<{ table_name: string }>`
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
    ORDER BY table_name`.execute(db)
  const tables = rows.map((row) => row.table_name).filter((name) => !VOLATILE_TABLES.has(name))
  const missing = EXPECTED_TABLES.filter((name) => !tables.includes(name))
  if (missing.length > 0) throw new Error(`fingerprint: tables not found in the current schema: ${missing.join(', ')}`)
  const columns: RawBuilder<unknown>[] = tables.map(
    (name) => sql`(SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM ${sql.table(name)} t) AS ${sql.ref(name)}`,
  )
  const query = sql<Fingerprint>`SELECT ${sql.join(columns)}`
  return async () => {
    const result = await query.execute(db)
    const row = result.rows[0]
    if (!row) throw new Error('fingerprint: no row')
    return row
  }
}

/** The tables whose hash differs, for a readable failure. */
export function changedTables(before: Fingerprint, after: Fingerprint): string[] {
  return Object.keys({ ...before, ...after }).filter((name) => before[name] !== after[name])
}

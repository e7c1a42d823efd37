import { sql, type Kysely } from 'kysely'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../db/types.js'
import * as vocabulary from '../../src/vocabulary.js'
import { useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

/**
 * The vocabulary (src/vocabulary.ts, from which the TypeBox enums of schemas/ and the column types
 * of db/types.ts derive) against the database's own lists: every CHECK constraint of the migrated
 * schema that holds a column to a list of words (`IN (…)`, `<@ ARRAY[…]`, a single `= '…'`) and
 * every enum-typed column, read from the catalogue, both ways: a word the service may write that
 * the database refuses, a word the database allows that the service does not know, a list with no
 * column, a column with no list. On PGlite and PostgreSQL.
 */

type VocabularyName = { [K in keyof typeof vocabulary]: (typeof vocabulary)[K] extends readonly string[] ? K : never }[keyof typeof vocabulary]

/** Which list each enumerated column holds: `table.column` → the vocabulary's name for it. */
const COLUMNS: Record<string, VocabularyName> = {
  'users.migration_state': 'MIGRATION_STATES',
  'company_roles.role': 'ROLE_KINDS',
  'memberships.permissions': 'PERMISSIONS',
  'token_families.revoked_reason': 'REVOCATION_REASONS',
  'kyc_documents.type': 'KYC_TYPES',
  'kyc_documents.status': 'KYC_REVIEW_STATUSES',
  'document_solicitations.document_types': 'KYC_TYPES',
  'document_solicitations.status': 'SOLICITATION_STATUSES',
  'bank_accounts.account_type': 'BANK_ACCOUNT_TYPES',
  'customers.tax_id_type': 'TAX_ID_TYPES',
  'titles.status': 'TITLE_STATUSES',
  'bids.status': 'BID_STATUSES',
  'operations.status': 'OPERATION_STATUSES',
  'title_documents.kind': 'TITLE_DOCUMENT_KINDS',
  'signature_envelopes.status': 'ENVELOPE_STATUSES',
  'signature_signers.status': 'SIGNER_STATUSES',
  'webhook_deliveries.outcome': 'WEBHOOK_OUTCOMES',
}

/** Lists of the vocabulary that no column stores, and why. */
const NOT_STORED: Partial<Record<VocabularyName, string>> = {
  KYC_CHECK_STATUSES: "route 7's view of a required type, computed from the latest kyc_documents row (its review status, or expired, or missing)",
  PRESENCE_STATUSES: "route 6's view, computed from company_role_presence.last_seen_at",
}

/** Enumerated columns whose words are not the vocabulary's, and why. */
const NOT_VOCABULARY: Record<string, string> = {
  'deployment_marks.name': "the production mark's bookkeeping (migration 0010), written and read by src/db/production-mark.ts alone",
  'deployment_marks.marked_by': "the production mark's bookkeeping (migration 0010), written and read by src/db/production-mark.ts alone",
}

interface Enumeration {
  column: string
  values: string[]
  /** Where it was read: the constraint's name, or the enum type's. */
  source: string
}

const literals = (list: string): string[] => [...list.matchAll(/'((?:[^']|'')*)'/g)].map((match) => match[1]!.replaceAll("''", "'"))

/** A column as pg_get_constraintdef prints it (`role`, `"order"`, `(kind)::text`), not a cast's type name. */
const CAST = String.raw`(?:::\w+(?: \w+)*)?`
const COLUMN = String.raw`(?<![:\w"])\(?"?(\w+)"?\)?${CAST}`
const LITERAL = String.raw`'(?:[^']|'')*'${CAST}`
const LIST = String.raw`ARRAY\[((?:${LITERAL}(?:, )?)+)\]`
const ANY_OF = new RegExp(String.raw`${COLUMN} = ANY \(\(?${LIST}`, 'g')
const ALL_IN = new RegExp(String.raw`${COLUMN} <@ \(?${LIST}`, 'g')
const EQUALS = new RegExp(String.raw`${COLUMN} = (${LITERAL})\)`, 'g')

/**
 * The lists of words a CHECK constraint's definition (pg_get_constraintdef) holds columns to:
 * `col = ANY (ARRAY['a'::text, …])` (an `IN`), `col <@ ARRAY[…]` (an array column), `(col = 'a'::text)`
 * (an `IN` of one word).
 */
function enumerationsOf(table: string, name: string, definition: string): Enumeration[] {
  const found: Enumeration[] = []
  for (const pattern of [ANY_OF, ALL_IN, EQUALS]) {
    for (const match of definition.matchAll(pattern)) found.push({ column: `${table}.${match[1]!}`, values: literals(match[2]!), source: name })
  }
  return found
}

/** Every enumerated column of the handle's schema: its CHECK constraints' lists, and its enum type's labels. */
async function databaseEnumerations(db: Kysely<Database>): Promise<Enumeration[]> {
  const { rows: checks } = await sql<{ table: string; name: string; definition: string }>`
    SELECT rel.relname AS table, con.conname AS name, pg_get_constraintdef(con.oid) AS definition
      FROM pg_constraint con
      JOIN pg_class rel ON rel.oid = con.conrelid
     WHERE con.contype = 'c' AND rel.relnamespace = current_schema()::regnamespace
     ORDER BY rel.relname, con.conname`.execute(db)
  const { rows: enums } = await sql<{ table: string; column: string; type: string; labels: string[] }>`
    SELECT rel.relname AS table, att.attname AS column, typ.typname AS type,
           array_agg(lab.enumlabel::text ORDER BY lab.enumsortorder) AS labels
      FROM pg_attribute att
      JOIN pg_class rel ON rel.oid = att.attrelid AND rel.relkind = 'r'
      JOIN pg_type col ON col.oid = att.atttypid
      JOIN pg_type typ ON typ.oid = (CASE WHEN col.typelem <> 0 THEN col.typelem ELSE col.oid END)
      JOIN pg_enum lab ON lab.enumtypid = typ.oid
     WHERE rel.relnamespace = current_schema()::regnamespace AND att.attnum > 0 AND NOT att.attisdropped
     GROUP BY rel.relname, att.attname, typ.typname`.execute(db)
  return [
    ...checks.flatMap((check) => enumerationsOf(check.table, check.name, check.definition)),
    ...enums.map((row) => ({ column: `${row.table}.${row.column}`, values: row.labels, source: `enum ${row.type}` })),
  ]
}

/** The differences, each naming the column, the list and the words. */
function differences(found: Enumeration[]): string[] {
  const lists = Object.keys(vocabulary).filter((name): name is VocabularyName => Array.isArray(vocabulary[name as keyof typeof vocabulary]))
  const problems: string[] = []
  const byColumn = new Map<string, Enumeration[]>()
  for (const enumeration of found) byColumn.set(enumeration.column, [...(byColumn.get(enumeration.column) ?? []), enumeration])
  for (const [column, enumerations] of byColumn) {
    const name = COLUMNS[column]
    if (!name) {
      if (!NOT_VOCABULARY[column]) {
        problems.push(
          `${column} (${enumerations[0]!.source}) allows ${enumerations[0]!.values.join(', ')}: name the list in src/vocabulary.ts and here`,
        )
      }
      continue
    }
    if (enumerations.length > 1) problems.push(`${column} has ${enumerations.length} lists: ${enumerations.map((e) => e.source).join(', ')}`)
    const words: readonly string[] = vocabulary[name]
    for (const { values, source } of enumerations) {
      const refused = words.filter((word) => !values.includes(word))
      const unknown = values.filter((value) => !words.includes(value))
      if (refused.length) problems.push(`${column} (${source}) refuses ${refused.join(', ')} of ${name}`)
      if (unknown.length) problems.push(`${column} (${source}) allows ${unknown.join(', ')}, not in ${name}`)
    }
  }
  for (const [column, name] of Object.entries(COLUMNS)) {
    if (!byColumn.has(column)) problems.push(`${column} holds ${name} but no CHECK constraint or enum type of the database says so`)
  }
  for (const column of Object.keys(NOT_VOCABULARY)) {
    if (!byColumn.has(column)) problems.push(`${column} is listed as not the vocabulary's, but the database has no list for it`)
  }
  const held = new Set(Object.values(COLUMNS))
  for (const name of lists) {
    if (!held.has(name) && !NOT_STORED[name])
      problems.push(`${name} (src/vocabulary.ts) is held to no column: map it to one, or say why no column stores it`)
    if (held.has(name) && NOT_STORED[name]) problems.push(`${name} is both held to a column and listed as stored by none`)
  }
  return problems
}

describe('the vocabulary and the database', () => {
  it('reads the lists of every definition form PostgreSQL prints', () => {
    expect(enumerationsOf('t', 'c', "CHECK ((role = ANY (ARRAY['seller'::text, 'buyer'::text])))")).toEqual([
      { column: 't.role', values: ['seller', 'buyer'], source: 'c' },
    ])
    expect(enumerationsOf('t', 'c', "CHECK ((permissions <@ ARRAY['documents'::text, 'it''s'::text]))")).toEqual([
      { column: 't.permissions', values: ['documents', "it's"], source: 'c' },
    ])
    expect(enumerationsOf('t', 'c', "CHECK ((name = 'production'::text))")).toEqual([{ column: 't.name', values: ['production'], source: 'c' }])
    expect(enumerationsOf('t', 'c', "CHECK (((kind)::text = ANY ((ARRAY['a'::character varying, 'b'::character varying])::text[])))")).toEqual([
      { column: 't.kind', values: ['a', 'b'], source: 'c' },
    ])
    // Not lists of words: a format, an expression of the column, a range.
    expect(enumerationsOf('t', 'c', "CHECK ((tax_id ~ '^[0-9A-Z]{12}[0-9]{2}$'::text))")).toEqual([])
    expect(enumerationsOf('t', 'c', "CHECK (((email = lower(btrim(email))) AND (email <> ''::text)))")).toEqual([])
    expect(enumerationsOf('t', 'c', 'CHECK ((size_bytes >= 0))')).toEqual([])
  })

  it("every enumerated column's CHECK constraint allows exactly its vocabulary list, and every list is held to a column", async () => {
    const { db } = await testDatabase()
    const found = await databaseEnumerations(db)
    expect(found.length).toBeGreaterThanOrEqual(Object.keys(COLUMNS).length)
    const problems = differences(found)
    expect(problems, problems.join('\n')).toEqual([])
  })

  it('names the column and the words when they differ, both ways', async () => {
    const { db } = await testDatabase()
    const found = await databaseEnumerations(db)
    const before = new Set(differences(found))
    const added = (changed: Enumeration[]) => differences(changed).filter((problem) => !before.has(problem))
    const source = found.find((enumeration) => enumeration.column === 'titles.status')!.source
    const renamed = found.map((enumeration) =>
      enumeration.column === 'titles.status'
        ? { ...enumeration, values: [...enumeration.values.filter((value) => value !== 'sold'), 'archived'] }
        : enumeration,
    )
    expect(added(renamed)).toEqual([
      `titles.status (${source}) refuses sold of TITLE_STATUSES`,
      `titles.status (${source}) allows archived, not in TITLE_STATUSES`,
    ])
    expect(added(found.filter((enumeration) => enumeration.column !== 'bids.status'))).toEqual([
      'bids.status holds BID_STATUSES but no CHECK constraint or enum type of the database says so',
    ])
    expect(added([...found, { column: 'titles.colour', values: ['red'], source: 'titles_colour_check' }])).toEqual([
      'titles.colour (titles_colour_check) allows red: name the list in src/vocabulary.ts and here',
    ])
  })
})

describe('the vocabulary and the API', () => {
  const ctx = useTestApp()

  it("every enum of the OpenAPI document is the vocabulary's (all of a list, or part of one), problem codes and constants aside", () => {
    const lists = Object.values(vocabulary as Record<string, unknown>).filter((value): value is readonly string[] => Array.isArray(value))
    const strays: string[] = []
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== 'object' || node === null) return
      const { enum: values } = node as { enum?: unknown[] }
      // A problem's `code` lists the codes the route answers with that status (schemas/problems.ts); one value is a constant (`"ok"`).
      if (Array.isArray(values) && values.length > 1 && values.every((value) => typeof value === 'string') && !path.endsWith('/properties/code')) {
        if (!lists.some((words) => values.every((value) => words.includes(value as string)))) strays.push(`${path}: ${values.join(', ')}`)
      }
      for (const [key, child] of Object.entries(node)) walk(child, `${path}/${key}`)
    }
    walk(ctx.app.swagger(), '')
    expect(strays, strays.join('\n')).toEqual([])
  })
})

import { sql, type Kysely } from 'kysely'
import type { Database } from '../types.js'

/**
 * A production-like volume on top of the demo data (issue 17), written by the database itself with
 * generate_series: no row travels from Node. Every constraint and foreign key stays on, so the rows
 * are ones the service could have written. Ids are md5 of a name and a number, so that a row's
 * foreign keys are computed, not looked up.
 *
 * Full scale (factor 1): 20,000 companies, 100,000 users, 2M titles, 6M title documents, 1.1M
 * bids, 200k operations, 100k solicitations, 2M token families, 5M webhook deliveries, 1M idempotency keys. Heavy
 * tenants scale with the factor: one seller with 50k titles, one buyer with 20k bids; one title has
 * 20 documents at any factor. Small factors keep at least 2,000 companies and 5,000 users: with
 * fewer, those tables fit in a few pages, and the planner rightly scans them instead of using an index.
 */

export interface VolumeStep {
  table: string
  /** Rows this step writes (approximately, for progress output). */
  rows: number
  sql: string
}

export interface VolumeCounts {
  companies: number
  sellers: number
  buyers: number
  users: number
  tokenFamilies: number
  solicitations: number
  conversations: number
  titles: number
  heavySellerTitles: number
  bids: number
  heavyBuyerBids: number
  deliveries: number
  idempotencyKeys: number
}

export function volumeCounts(factor: number): VolumeCounts {
  if (!(factor > 0 && factor <= 1)) throw new Error(`scale factor must be in (0, 1], got ${factor}`)
  const scaled = (full: number, floor: number) => Math.max(floor, Math.round(full * factor))
  const companies = scaled(20_000, 2_000)
  const sellers = Math.floor(companies * 0.75)
  const buyers = Math.floor(companies * 0.5)
  const titles = scaled(2_000_000, 4_000)
  return {
    companies,
    sellers,
    buyers,
    users: scaled(100_000, 5_000),
    tokenFamilies: scaled(2_000_000, 4_000),
    solicitations: Math.min(scaled(100_000, 400), sellers * buyers),
    conversations: Math.min(scaled(100_000, 400), sellers * buyers),
    titles,
    heavySellerTitles: Math.min(Math.floor(titles / 4), scaled(50_000, 100)),
    bids: scaled(1_100_000, 2_200),
    heavyBuyerBids: scaled(20_000, 100),
    deliveries: scaled(5_000_000, 10_000),
    idempotencyKeys: scaled(1_000_000, 4_000),
  }
}

/** Rows per INSERT: big enough to amortise the statement, small enough to show progress and keep WAL per commit bounded. */
const BATCH = 200_000

// Company i (1..C): sellers are companies 1..S (seller k is company k), buyers are companies
// C-B+1..C (buyer k is company C-B+k); the middle ones are both.
const company = (i: string) => `md5('vc:' || ${i})::uuid`
const seller = (k: string) => `md5('vs:' || ${k})::uuid`
const buyer = (k: string) => `md5('vb:' || ${k})::uuid`
const user = (j: string) => `md5('vu:' || ${j})::uuid`
const title = (n: string) => `md5('vt:' || ${n})::uuid`
const document = (n: string, m: string) => `md5('vd:' || ${n} || ':' || ${m})::uuid`
const envelope = (n: string) => `md5('ve:' || ${n})::uuid`
const account = (i: string, m: string) => `md5('va:' || ${i} || ':' || ${m})::uuid`
const customer = (k: string, m: string) => `md5('vp:' || ${k} || ':' || ${m})::uuid`
const hex64 = (text: string) => `md5(${text}) || md5('x' || ${text})`

/**
 * Title n's status by n mod 40: 20 % draft, 15 % listed, 2.5 % sold (awaiting settlement),
 * 7.5 % settled, 55 % cancelled (listings that ended unsold), so operations are about a tenth of titles.
 */
const titleStatus = (n: string) => `CASE
  WHEN ${n} % 40 < 8 THEN 'draft' WHEN ${n} % 40 < 14 THEN 'listed' WHEN ${n} % 40 = 14 THEN 'sold'
  WHEN ${n} % 40 < 18 THEN 'settled' ELSE 'cancelled' END`

/** The seller of title n: the heavy seller (seller 1) has the first titles, the others share the rest. */
const titleSeller = (n: string, c: VolumeCounts) =>
  `CASE WHEN ${n} <= ${c.heavySellerTitles} THEN 1 ELSE (${n} - ${c.heavySellerTitles} - 1) % ${c.sellers - 1} + 2 END`

function batched(table: string, total: number, statement: (from: number, to: number) => string, first = 1): VolumeStep[] {
  const steps: VolumeStep[] = []
  for (let from = first; from < first + total; from += BATCH) {
    const to = Math.min(first + total - 1, from + BATCH - 1)
    steps.push({ table, rows: to - from + 1, sql: statement(from, to) })
  }
  return steps
}

/** The INSERT statements, in foreign-key order. */
export function volumeSteps(factor: number): VolumeStep[] {
  const c = volumeCounts(factor)
  const { companies: C, sellers: S, buyers: B, users: U } = c
  const validity = `(VALUES ('articles_of_association', NULL), ('cnpj_card', 90), ('partners_identification', NULL),
    ('proof_of_address', 90), ('balance_sheet', 365), ('income_statement', 365), ('revenue_statement', 90),
    ('debt_clearance_certificate', 180)) AS kyc (type, days)`
  return [
    ...batched(
      'companies',
      C,
      (a, b) => `
      INSERT INTO companies (id, name, trade_name, tax_id, created_at)
      SELECT ${company('i')}, 'Volume Company ' || i, 'Volume ' || i, 'V' || lpad(i::text, 11, '0') || '00',
             now() - (i % 1000) * interval '1 day'
        FROM generate_series(${a}, ${b}) AS i`,
    ),
    ...batched(
      'company_roles',
      S,
      (a, b) => `
      INSERT INTO company_roles (id, company_id, role) SELECT ${seller('k')}, ${company('k')}, 'seller' FROM generate_series(${a}, ${b}) AS k`,
    ),
    ...batched(
      'company_roles',
      B,
      (a, b) => `
      INSERT INTO company_roles (id, company_id, role) SELECT ${buyer('k')}, ${company(`(${C - B} + k)`)}, 'buyer' FROM generate_series(${a}, ${b}) AS k`,
    ),
    ...batched(
      'users',
      U,
      (a, b) => `
      INSERT INTO users (id, email, name, password_hash, last_login, created_at)
      SELECT ${user('j')}, 'v' || j || '@volume.example', 'Volume User ' || j, '!unusable',
             now() - (j % 30) * interval '1 day', now() - (j % 1000) * interval '1 day'
        FROM generate_series(${a}, ${b}) AS j`,
    ),
    // User j works for company (j - 1) % C + 1, in each of its roles, with every permission.
    ...batched(
      'memberships',
      U,
      (a, b) => `
      INSERT INTO memberships (user_id, company_role_id, permissions)
      SELECT ${user('j')}, role_id, '{admin}'
        FROM generate_series(${a}, ${b}) AS j
       CROSS JOIN LATERAL (SELECT (j - 1) % ${C} + 1 AS i) AS c
       CROSS JOIN LATERAL (
             SELECT ${seller('c.i')} AS role_id WHERE c.i <= ${S}
             UNION ALL SELECT ${buyer(`(c.i - ${C - B})`)} WHERE c.i > ${C - B}) AS r`,
    ),
    // Logins over the last 60 days, a family each: most past their 30-day end, a tenth logged out, a few revoked for reuse.
    ...batched(
      'token_families',
      c.tokenFamilies,
      (a, b) => `
      INSERT INTO token_families (id, user_id, created_at, absolute_expires_at, revoked_at, revoked_reason)
      SELECT md5('vf:' || k)::uuid, ${user(`((k - 1) % ${U} + 1)`)}, t.created, t.created + interval '30 days',
             CASE WHEN k % 10 = 0 OR k % 50 = 1 THEN t.created + interval '1 hour' END,
             CASE WHEN k % 10 = 0 THEN 'logout' WHEN k % 50 = 1 THEN 'reuse' END
        FROM generate_series(${a}, ${b}) AS k
       CROSS JOIN LATERAL (SELECT now() - ((k::bigint * 7919) % 86400) * interval '1 minute' AS created) AS t`,
    ),
    // Their rotating part (migration 0016): a revoked family has no current token.
    ...batched(
      'token_family_rotations',
      c.tokenFamilies,
      (a, b) => `
      INSERT INTO token_family_rotations (family_id, current_refresh_jti)
      SELECT md5('vf:' || k)::uuid, CASE WHEN k % 10 <> 0 AND k % 50 <> 1 THEN md5('vj:' || k) END
        FROM generate_series(${a}, ${b}) AS k`,
    ),
    // Each type once, and an older version of half of them; a seventh pending review, an eleventh rejected.
    ...batched(
      'kyc_documents',
      C,
      (a, b) => `
      INSERT INTO kyc_documents (company_id, type, status, filename, issued_at, valid_until, reviewed_at, created_at, updated_at)
      SELECT ${company('i')}, kyc.type,
             CASE WHEN v.version = 2 AND (i + length(kyc.type)) % 7 = 0 THEN 'pending_review'
                  WHEN v.version = 2 AND (i + length(kyc.type)) % 11 = 0 THEN 'rejected' ELSE 'approved' END,
             kyc.type || '.pdf', d.issued, d.issued + kyc.days, d.issued + 1, d.issued, d.issued + 1
        FROM generate_series(${a}, ${b}) AS i
       CROSS JOIN ${validity}
       CROSS JOIN LATERAL (SELECT 1 AS version WHERE i % 2 = 0 UNION ALL SELECT 2) AS v
       CROSS JOIN LATERAL (SELECT current_date - ((i * 31 + length(kyc.type) * 7) % 300) - (2 - v.version) * 200 AS issued) AS d`,
    ),
    ...batched(
      'bank_accounts',
      C,
      (a, b) => `
      INSERT INTO bank_accounts (id, company_id, bank_code, branch, account_number, account_digit, account_type, holder_name,
                                 holder_tax_id, is_default, created_at)
      SELECT ${account('i', 'm')}, ${company('i')}, '341', '0001', (i * 10 + m)::text, '5', 'checking', 'Volume Company ' || i,
             'V' || lpad(i::text, 11, '0') || '00', m = 1, now() - (400 - m) * interval '1 day'
        FROM generate_series(${a}, ${b}) AS i CROSS JOIN generate_series(1, 2) AS m`,
    ),
    ...batched(
      'customers',
      S,
      (a, b) => `
      INSERT INTO customers (id, company_role_id, name, tax_id, tax_id_type)
      SELECT ${customer('k', 'm')}, ${seller('k')}, 'Payer ' || k || '-' || m, lpad((k * 10 + m)::text, 11, '0'), 'cpf'
        FROM generate_series(${a}, ${b}) AS k CROSS JOIN generate_series(0, 9) AS m`,
    ),
    // Solicitation s from buyer (s-1) % B + 1 to seller ((s-1) / B) % S + 1: distinct pairs; a fifth still open.
    ...batched(
      'document_solicitations',
      c.solicitations,
      (a, b) => `
      INSERT INTO document_solicitations (buyer_company_role_id, seller_company_role_id, document_types, status, created_by,
                                          created_at, closed_at)
      SELECT ${buyer(`((s - 1) % ${B} + 1)`)}, ${seller(`(((s - 1) / ${B}) % ${S} + 1)`)}, '{cnpj_card,proof_of_address}',
             CASE s % 5 WHEN 0 THEN 'open' WHEN 4 THEN 'cancelled' ELSE 'fulfilled' END,
             ${user(`(${C - B} + (s - 1) % ${B} + 1)`)}, now() - (s % 365) * interval '1 day',
             CASE WHEN s % 5 <> 0 THEN now() - (s % 365) * interval '1 day' + interval '5 days' END
        FROM generate_series(${a}, ${b}) AS s`,
    ),
    ...batched(
      'chat_conversations',
      c.conversations,
      (a, b) => `
      INSERT INTO chat_conversations (buyer_company_role_id, seller_company_role_id)
      SELECT ${buyer(`((s - 1) % ${B} + 1)`)}, ${seller(`(((s - 1) / ${B}) % ${S} + 1)`)} FROM generate_series(${a}, ${b}) AS s`,
    ),
    ...batched(
      'company_role_presence',
      S,
      (a, b) => `
      INSERT INTO company_role_presence (company_role_id, last_seen_at)
      SELECT ${seller('k')}, now() - (k % 1440) * interval '1 minute' FROM generate_series(${a}, ${b}) AS k`,
    ),
    ...batched(
      'titles',
      c.titles,
      (a, b) => `
      INSERT INTO titles (id, seller_company_role_id, payer_customer_id, number, face_value, issue_date, due_date, status, listed_at, created_at)
      SELECT ${title('n')}, ${seller('t.k')}, ${customer('t.k', 'n % 10')}, 'V-' || n, 1000 + n % 50000,
             current_date - n % 400, current_date - n % 400 + 90, t.status,
             CASE WHEN t.status IN ('listed', 'sold', 'settled', 'cancelled') THEN now() - (n % 400) * interval '1 day' END,
             now() - (n % 400) * interval '1 day'
        FROM generate_series(${a}, ${b}) AS n
       CROSS JOIN LATERAL (SELECT ${titleSeller('n', c)} AS k, ${titleStatus('n')} AS status) AS t`,
    ),
    // Bids on titles that were on the market (listed, sold, settled: n mod 40 in 8..17); buyer 1 is the heavy one.
    ...batched(
      'bids',
      c.bids,
      (a, b) => `
      INSERT INTO bids (title_id, buyer_company_role_id, monthly_rate, amount, status, created_at)
      SELECT ${title('t.n')}, ${buyer(`CASE WHEN q <= ${c.heavyBuyerBids} THEN 1 ELSE (q - 1) % ${B} + 1 END`)},
             1.2 + (q % 100) / 100.0, 900 + q % 40000, (ARRAY['active', 'withdrawn', 'rejected', 'active'])[q % 4 + 1],
             now() - (t.n % 400) * interval '1 day'
        FROM generate_series(${a}, ${b}) AS q
       CROSS JOIN LATERAL (SELECT 40 * (((q - 1) / 10) % ${Math.max(1, Math.floor(c.titles / 40))}) + 8 + (q - 1) % 10 AS n) AS t
       WHERE t.n <= ${c.titles}`,
    ),
    // An operation per sold or settled title, paid into the seller company's first account.
    ...batched(
      'operations',
      c.titles,
      (a, b) => `
      INSERT INTO operations (title_id, buyer_company_role_id, payout_bank_account_id, purchase_price, status, created_at, settled_at)
      SELECT ${title('n')}, ${buyer(`((n - 1) % ${B} + 1)`)}, ${account(titleSeller('n', c), '1')}, 900 + n % 40000,
             CASE WHEN n % 40 = 14 THEN 'awaiting_settlement' ELSE 'settled' END, now() - (n % 400) * interval '1 day',
             CASE WHEN n % 40 <> 14 THEN now() - (n % 400) * interval '1 day' + interval '30 days' END
        FROM generate_series(${a}, ${b}) AS n
       WHERE n % 40 BETWEEN 14 AND 17`,
    ),
    // Three documents a title (the invoice, its NF-e, the assignment contract); title 1 has 20.
    ...batched(
      'title_documents',
      c.titles,
      (a, b) => `
      INSERT INTO title_documents (id, title_id, kind, filename, content_type, size_bytes, sha256, uploaded_at)
      SELECT ${document('n', 'm')}, ${title('n')},
             (ARRAY['invoice', 'nfe_xml', 'assignment_contract', 'payment_slip', 'other'])[least(m, 5)],
             'document-' || n || '-' || m || '.pdf', 'application/pdf', 10000 + (n * m) % 500000, ${hex64(`'vd:' || n || ':' || m`)},
             now() - (n % 400) * interval '1 day' + m * interval '1 minute'
        FROM generate_series(${a}, ${b}) AS n
       CROSS JOIN LATERAL generate_series(1, CASE WHEN n = 1 THEN 20 ELSE 3 END) AS m`,
    ),
    // An envelope on the assignment contract of every third title, two signers each.
    ...batched(
      'signature_envelopes',
      c.titles,
      (a, b) => `
      INSERT INTO signature_envelopes (id, envelope_key, title_document_id, status, completed_at, last_event_at)
      SELECT ${envelope('n')}, 'venv-' || n, ${document('n', '3')}, CASE WHEN n % 2 = 0 THEN 'signed' ELSE 'pending' END,
             CASE WHEN n % 2 = 0 THEN now() - (n % 400) * interval '1 day' END, now() - (n % 400) * interval '1 day'
        FROM generate_series(${a}, ${b}) AS n
       WHERE n % 3 = 0`,
    ),
    ...batched(
      'signature_signers',
      c.titles,
      (a, b) => `
      INSERT INTO signature_signers (envelope_id, position, name, email, status, signed_at, last_event_at)
      SELECT ${envelope('n')}, p, 'Signer ' || p, 'signer' || p || '-' || n || '@volume.example',
             CASE WHEN n % 2 = 0 THEN 'signed' ELSE 'pending' END, CASE WHEN n % 2 = 0 THEN now() - (n % 400) * interval '1 day' END,
             now() - (n % 400) * interval '1 day'
        FROM generate_series(${a}, ${b}) AS n CROSS JOIN generate_series(1, 2) AS p
       WHERE n % 3 = 0`,
    ),
    // 90 days of deliveries, the newest first in n.
    ...batched(
      'webhook_deliveries',
      c.deliveries,
      (a, b) => `
      INSERT INTO webhook_deliveries (provider, dedupe_key, raw_body, received_at, event_name, envelope_key, occurred_at, outcome, processed_at)
      SELECT 'esign', ${hex64(`'vw:' || w`)},
             convert_to('{"event":{"name":"sign","data":{"signer":{"email":"signer1-' || w || '@volume.example"}}},"document":{"key":"venv-' || (w % ${c.titles} + 1) || '"},"volume":' || w || '}', 'UTF8'),
             d.at, 'sign', 'venv-' || (w % ${c.titles} + 1), d.at, 'applied', d.at
        FROM generate_series(${a}, ${b}) AS w
       CROSS JOIN LATERAL (SELECT now() - w * (interval '90 days' / ${c.deliveries}) AS at) AS d`,
    ),
    // Two days of keyed POSTs (24 h kept, the retention command daily), the newest first in n.
    ...batched(
      'idempotency_keys',
      c.idempotencyKeys,
      (a, b) => `
      INSERT INTO idempotency_keys (key_id, fingerprint, status, answer, created_at)
      SELECT sha256(convert_to('vk:' || n, 'UTF8')), substring(sha256(convert_to('vf:' || n, 'UTF8')) FROM 1 FOR 16), 201,
             convert_to(repeat('x', 220), 'UTF8'), now() - n * (interval '2 days' / ${c.idempotencyKeys})
        FROM generate_series(${a}, ${b}) AS n`,
    ),
  ]
}

/**
 * Runs the steps one after another, each its own transaction, then ANALYZE: on a freshly loaded
 * table the planner would otherwise plan with empty statistics (and autovacuum may be off).
 */
export async function loadVolume(db: Kysely<Database>, factor: number, progress: (message: string) => void = () => undefined): Promise<void> {
  const steps = volumeSteps(factor)
  const started = Date.now()
  for (const [index, step] of steps.entries()) {
    await sql.raw(step.sql).execute(db)
    progress(`[${index + 1}/${steps.length}] ${step.table}: ${step.rows} (${((Date.now() - started) / 1000).toFixed(1)} s)`)
  }
  await sql`ANALYZE`.execute(db)
  progress(`ANALYZE done (${((Date.now() - started) / 1000).toFixed(1)} s)`)
}

import { sql, type Kysely } from 'kysely'
import type { Database } from '../types.js'
import { KYC_TYPES, KYC_VALIDITY_DAYS, type KycType } from '../../src/vocabulary.js'
import { DEMO } from './ids.js'

export const DEMO_PASSWORD = 'Demo#2026!'
export const LEGACY_DEMO_PASSWORD = 'legacy-password'
const MARIA_HASH = 'pbkdf2_sha256$260000$demolegacysalt00000001$k82oSoq213VzjBxBToSlDjItc1ApjekuZRxJYN/lXOw='
const LUCAS_HASH = 'pbkdf2_sha256$260000$demolegacysalt00000002$uQ4cg2vQwsPi0OlbpkZohlAhAOQm6G0XTNLuj0CK3qw='

/**
 * argon2id of DEMO_PASSWORD with the service's parameters (src/auth/passwords.ts), made once: the
 * seed then needs nothing from the service, and the tests reseed before every test without hashing.
 */
const DEMO_PASSWORD_HASH = '$argon2id$v=19$m=19456,t=2,p=1$j6CiDn8KR8LtHkxEhFYgrg$mAm/2MorzhW07vkd14FHpuorGEBqY14cqqLWcteWKCM'

const DAY_MS = 86_400_000
const dayOffset = (now: Date, days: number): string => new Date(now.getTime() + days * DAY_MS).toISOString().slice(0, 10)
const minutesAgo = (now: Date, minutes: number): Date => new Date(now.getTime() - minutes * 60_000)

export async function isDemoSeeded(db: Kysely<Database>): Promise<boolean> {
  const row = await db.selectFrom('users').select('id').where('id', '=', DEMO.users.alice).executeTakeFirst()
  return row !== undefined
}

/** For a new embedded database (the embedded start and the command line): the demo data unless already there. */
export async function seedDemoUnlessPresent(db: Kysely<Database>): Promise<void> {
  if (!(await isDemoSeeded(db))) await seedDemoData(db)
}

/** Loads the demo data of docs/demo-data.md in one transaction. Dates are relative to `now`. */
export async function seedDemoData(db: Kysely<Database>, now: Date = new Date()): Promise<void> {
  const passwordHash = DEMO_PASSWORD_HASH
  await db.transaction().execute(async (trx) => {
    await seedIdentity(trx, passwordHash, now)
    await seedKyc(trx, now)
    await seedBankingAndCustomers(trx, now)
    await seedMarketplace(trx, now)
    await seedChat(trx, now)
  })
}

async function seedIdentity(db: Kysely<Database>, passwordHash: string, now: Date): Promise<void> {
  const { companies, roles, users } = DEMO
  await db
    .insertInto('companies')
    .values([
      { id: companies.acme, name: 'Acme Indústria Ltda', trade_name: 'Acme', tax_id: '11222333000181' },
      { id: companies.beta, name: 'Fundo Beta FIDC', trade_name: 'Beta FIDC', tax_id: '28456789000109' },
      { id: companies.gamma, name: 'Gamma Comércio Ltda', trade_name: 'Gamma', tax_id: '33445566000186' },
      { id: companies.delta, name: 'Delta Participações S.A.', trade_name: 'Delta', tax_id: '12ABC34501DE35' },
    ])
    .execute()
  await db
    .insertInto('company_roles')
    .values([
      { id: roles.acmeSeller, company_id: companies.acme, role: 'seller' },
      { id: roles.betaBuyer, company_id: companies.beta, role: 'buyer' },
      { id: roles.gammaSeller, company_id: companies.gamma, role: 'seller' },
      { id: roles.deltaSeller, company_id: companies.delta, role: 'seller' },
      { id: roles.deltaBuyer, company_id: companies.delta, role: 'buyer' },
    ])
    .execute()
  const person = (id: string, email: string, name: string) => ({ id, email, name, password_hash: passwordHash })
  await db
    .insertInto('users')
    .values([
      person(users.alice, 'alice@acme.example', 'Alice Almeida'),
      person(users.bob, 'bob@beta.example', 'Bob Barros'),
      person(users.carol, 'carol@gamma.example', 'Carol Costa'),
      person(users.dave, 'dave@delta.example', 'Dave Duarte'),
      person(users.erin, 'erin@acme.example', 'Erin Esteves'),
      { ...person(users.frank, 'frank@acme.example', 'Frank Freitas'), is_active: false },
      {
        id: users.maria,
        email: 'maria@legacy.example',
        name: 'Maria Moraes',
        password_hash: MARIA_HASH,
        is_active: false,
        legacy_id: 1042,
        migration_state: 'pending',
      },
      {
        id: users.lucas,
        email: 'lucas@legacy.example',
        name: 'Lucas Lima',
        password_hash: LUCAS_HASH,
        legacy_id: 1043,
        migration_state: 'confirmed',
        last_login: minutesAgo(now, 60 * 24 * 40),
      },
    ])
    .execute()
  await db
    .insertInto('memberships')
    .values([
      { user_id: users.alice, company_role_id: roles.acmeSeller, permissions: ['admin'] },
      { user_id: users.bob, company_role_id: roles.betaBuyer, permissions: ['admin'] },
      { user_id: users.carol, company_role_id: roles.gammaSeller, permissions: ['admin'] },
      { user_id: users.dave, company_role_id: roles.deltaSeller, permissions: ['admin'] },
      { user_id: users.dave, company_role_id: roles.deltaBuyer, permissions: ['admin'] },
      { user_id: users.erin, company_role_id: roles.acmeSeller, permissions: ['marketplace'] },
      { user_id: users.frank, company_role_id: roles.acmeSeller, permissions: ['admin'] },
      { user_id: users.lucas, company_role_id: roles.betaBuyer, permissions: ['marketplace'] },
    ])
    .execute()
}

async function seedKyc(db: Kysely<Database>, now: Date): Promise<void> {
  const approved = (companyId: string, type: KycType, issuedDaysAgo = 10) => {
    const validity = KYC_VALIDITY_DAYS[type]
    return {
      company_id: companyId,
      type,
      status: 'approved' as const,
      filename: `${type}.pdf`,
      issued_at: dayOffset(now, -issuedDaysAgo),
      valid_until: validity === null ? null : dayOffset(now, validity - issuedDaysAgo),
      reviewed_at: minutesAgo(now, 60 * 24 * (issuedDaysAgo - 1)),
    }
  }
  const acme = KYC_TYPES.map((type) => (type === 'balance_sheet' ? approved(DEMO.companies.acme, type, 400) : approved(DEMO.companies.acme, type)))
  const gamma = (['cnpj_card', 'articles_of_association'] as const).map((type) => approved(DEMO.companies.gamma, type))
  const delta = KYC_TYPES.map((type) => approved(DEMO.companies.delta, type))
  await db
    .insertInto('kyc_documents')
    .values([...acme, ...gamma, ...delta])
    .execute()
}

async function seedBankingAndCustomers(db: Kysely<Database>, now: Date): Promise<void> {
  const { bankAccounts: accounts, companies } = DEMO
  const account = (id: string, companyId: string, holderTaxId: string, number: string, ageDays: number) => ({
    id,
    company_id: companyId,
    bank_code: '341',
    branch: '0001',
    account_number: number,
    account_digit: '5',
    account_type: 'checking' as const,
    holder_name: 'Titular Demo',
    holder_tax_id: holderTaxId,
    created_at: minutesAgo(now, ageDays * 24 * 60),
  })
  await db
    .insertInto('bank_accounts')
    .values([
      { ...account(accounts.acme1, companies.acme, '11222333000181', '12345', 300), holder_name: 'Acme Indústria Ltda', is_default: true },
      { ...account(accounts.acme2, companies.acme, '11222333000181', '23456', 200), holder_name: 'Acme Indústria Ltda', bank_code: '001' },
      { ...account(accounts.acme3, companies.acme, '11222333000181', '34567', 100), holder_name: 'Acme Indústria Ltda', bank_code: '237' },
      { ...account(accounts.gamma1, companies.gamma, '33445566000186', '45678', 250), holder_name: 'Gamma Comércio Ltda', is_default: true },
      { ...account(accounts.delta1, companies.delta, '12ABC34501DE35', '56789', 150), holder_name: 'Delta Participações S.A.', is_default: true },
      {
        ...account(accounts.delta2, companies.delta, '12ABC34501DE35', '67890', 50),
        holder_name: 'Delta Participações S.A.',
        account_type: 'payment',
      },
    ])
    .execute()
  const { customers, roles } = DEMO
  await db
    .insertInto('customers')
    .values([
      {
        id: customers.acmeCompany,
        company_role_id: roles.acmeSeller,
        name: 'Zeta Distribuidora Ltda',
        tax_id: '45678912000155',
        tax_id_type: 'cnpj',
        email: 'financeiro@zeta.example',
        phone: '+551130000001',
      },
      {
        id: customers.acmePerson,
        company_role_id: roles.acmeSeller,
        name: 'João da Silva',
        tax_id: '52998224725',
        tax_id_type: 'cpf',
        email: null,
        phone: null,
      },
      {
        id: customers.gammaCompany,
        company_role_id: roles.gammaSeller,
        name: 'Omega Atacado Ltda',
        tax_id: '98765432100060',
        tax_id_type: 'cnpj',
        email: null,
        phone: null,
      },
      {
        id: customers.deltaCompany,
        company_role_id: roles.deltaSeller,
        name: 'Sigma Serviços Ltda',
        tax_id: '55667788900098',
        tax_id_type: 'cnpj',
        email: null,
        phone: null,
      },
    ])
    .execute()
}

async function seedMarketplace(db: Kysely<Database>, now: Date): Promise<void> {
  const { titles, roles, customers } = DEMO
  const title = (id: string, seller: string, payer: string, number: string, faceValue: string, nfeKey: string | null) => ({
    id,
    seller_company_role_id: seller,
    payer_customer_id: payer,
    number,
    face_value: faceValue,
    issue_date: dayOffset(now, -5),
    due_date: dayOffset(now, 60),
    nfe_key: nfeKey,
  })
  await db
    .insertInto('titles')
    .values([
      {
        ...title(titles.t1, roles.acmeSeller, customers.acmeCompany, 'NF-1001', '15000.00', '35261111222333000181550010000001011000001016'),
        status: 'listed',
        listed_at: minutesAgo(now, 60 * 24),
      },
      {
        ...title(titles.t2, roles.acmeSeller, customers.acmePerson, 'NF-1002', '4200.50', '35261111222333000181550010000001021000001021'),
        status: 'draft',
      },
      {
        ...title(titles.t3, roles.gammaSeller, customers.gammaCompany, 'NF-2001', '8800.00', '35261133445566000186550010000002011000002011'),
        status: 'listed',
        listed_at: minutesAgo(now, 60 * 12),
      },
      {
        ...title(titles.t4, roles.deltaSeller, customers.deltaCompany, 'NFS-3001', '23000.00', null),
        status: 'listed',
        listed_at: minutesAgo(now, 60 * 6),
      },
      {
        ...title(titles.t5, roles.acmeSeller, customers.acmeCompany, 'NF-1005', '31000.00', '35261111222333000181550010000001051000001058'),
        status: 'sold',
        listed_at: minutesAgo(now, 60 * 24 * 4),
      },
    ])
    .execute()
  await db
    .insertInto('bids')
    .values([
      {
        id: DEMO.bids.betaOnT1,
        title_id: titles.t1,
        buyer_company_role_id: roles.betaBuyer,
        monthly_rate: '1.8500',
        amount: '14250.00',
        status: 'active',
      },
      {
        id: DEMO.bids.betaOnT5,
        title_id: titles.t5,
        buyer_company_role_id: roles.betaBuyer,
        monthly_rate: '1.6000',
        amount: '29800.00',
        status: 'accepted',
      },
    ])
    .execute()
  await db
    .insertInto('operations')
    .values({
      id: DEMO.operations.t5,
      title_id: titles.t5,
      buyer_company_role_id: roles.betaBuyer,
      payout_bank_account_id: DEMO.bankAccounts.acme3,
      purchase_price: '29800.00',
      status: 'awaiting_settlement',
    })
    .execute()
  await seedTitleDocuments(db, now)
}

async function seedTitleDocuments(db: Kysely<Database>, now: Date): Promise<void> {
  const { titleDocuments: docs, titles, envelopes } = DEMO
  const doc = (
    id: string,
    titleId: string,
    kind: 'invoice' | 'nfe_xml' | 'assignment_contract',
    filename: string,
    contentType: string,
    size: number,
  ) => ({
    id,
    title_id: titleId,
    kind,
    filename,
    content_type: contentType,
    size_bytes: size,
    sha256: id.replace(/-/g, '').padEnd(64, '0'),
    uploaded_at: minutesAgo(now, 60 * 24 * 3),
  })
  await db
    .insertInto('title_documents')
    .values([
      doc(docs.t1Invoice, titles.t1, 'invoice', 'nf-1001.pdf', 'application/pdf', 48_213),
      doc(docs.t1NfeXml, titles.t1, 'nfe_xml', 'nf-1001.xml', 'application/xml', 9_877),
      doc(docs.t1Contract, titles.t1, 'assignment_contract', 'cessao-nf-1001.pdf', 'application/pdf', 120_554),
      doc(docs.t2Invoice, titles.t2, 'invoice', 'nf-1002.pdf', 'application/pdf', 51_002),
      doc(docs.t5Invoice, titles.t5, 'invoice', 'nf-1005.pdf', 'application/pdf', 47_120),
      doc(docs.t5Contract, titles.t5, 'assignment_contract', 'cessao-nf-1005.pdf', 'application/pdf', 118_940),
    ])
    .execute()
  const completed = minutesAgo(now, 60 * 24 * 2)
  await db
    .insertInto('signature_envelopes')
    .values([
      { id: envelopes.pending, envelope_key: 'demo-envelope-0001', title_document_id: docs.t1Contract, status: 'pending' },
      {
        id: envelopes.signed,
        envelope_key: 'demo-envelope-0002',
        title_document_id: docs.t5Contract,
        status: 'signed',
        completed_at: completed,
        last_event_at: completed,
      },
    ])
    .execute()
  const signer = (envelopeId: string, position: number, name: string, email: string, signedAt: Date | null) => ({
    envelope_id: envelopeId,
    position,
    name,
    email,
    status: signedAt ? ('signed' as const) : ('pending' as const),
    signed_at: signedAt,
    last_event_at: signedAt,
  })
  await db
    .insertInto('signature_signers')
    .values([
      signer(envelopes.pending, 1, 'Alice Almeida', 'alice@acme.example', null),
      signer(envelopes.pending, 2, 'Bob Barros', 'bob@beta.example', null),
      signer(envelopes.signed, 1, 'Alice Almeida', 'alice@acme.example', minutesAgo(now, 60 * 24 * 2 + 30)),
      signer(envelopes.signed, 2, 'Bob Barros', 'bob@beta.example', completed),
    ])
    .execute()
}

async function seedChat(db: Kysely<Database>, now: Date): Promise<void> {
  const { roles, conversations } = DEMO
  await db
    .insertInto('chat_conversations')
    .values([
      { id: conversations.betaAcme, buyer_company_role_id: roles.betaBuyer, seller_company_role_id: roles.acmeSeller },
      { id: conversations.deltaGamma, buyer_company_role_id: roles.deltaBuyer, seller_company_role_id: roles.gammaSeller },
    ])
    .execute()
  await db
    .insertInto('company_role_presence')
    .values({ company_role_id: roles.acmeSeller, last_seen_at: minutesAgo(now, 5) })
    .execute()
}

export interface RemovedDemoData {
  /** The e-mails of the demo users removed, in order. */
  users: string[]
  companies: number
}

/**
 * Deletes the demo data (`npm run unseed`), in one transaction: the demo users with their
 * memberships, sessions and idempotency answers, and the demo companies with everything of theirs
 * (roles, KYC, accounts, customers, titles, documents, envelopes, bids, operations, chats) and
 * every row of another company that deals with them (a bid on a demo title, a chat with a demo
 * role). Rows are found by the fixed ids of db/seed/ids.ts, never by their content. A row of
 * another company that still names a demo user (an account a demo user removed) stops it, with
 * nothing deleted.
 */
export async function removeDemoData(db: Kysely<Database>): Promise<RemovedDemoData> {
  const users = sql.join(Object.values(DEMO.users))
  const companies = sql.join(Object.values(DEMO.companies))
  const roles = sql`SELECT id FROM company_roles WHERE company_id IN (${companies})`
  const titles = sql`SELECT id FROM titles WHERE seller_company_role_id IN (${roles})`
  const documents = sql`SELECT id FROM title_documents WHERE title_id IN (${titles})`
  const envelopes = sql`SELECT id FROM signature_envelopes WHERE title_document_id IN (${documents})`
  return db.transaction().execute(async (trx) => {
    const found = await sql<{ email: string }>`SELECT email FROM users WHERE id IN (${users}) ORDER BY email`.execute(trx)
    // Children before their parents; each subquery still sees the parents it selects from.
    for (const statement of [
      sql`DELETE FROM signature_signers WHERE envelope_id IN (${envelopes})`,
      sql`DELETE FROM signature_envelopes WHERE id IN (${envelopes})`,
      sql`DELETE FROM title_documents WHERE id IN (${documents})`,
      sql`DELETE FROM operations WHERE title_id IN (${titles}) OR buyer_company_role_id IN (${roles})`,
      sql`DELETE FROM bids WHERE title_id IN (${titles}) OR buyer_company_role_id IN (${roles})`,
      sql`DELETE FROM titles WHERE id IN (${titles})`,
      sql`DELETE FROM customers WHERE company_role_id IN (${roles})`,
      sql`DELETE FROM chat_conversations WHERE buyer_company_role_id IN (${roles}) OR seller_company_role_id IN (${roles})`,
      sql`DELETE FROM company_role_presence WHERE company_role_id IN (${roles})`,
      sql`DELETE FROM document_solicitations
          WHERE buyer_company_role_id IN (${roles}) OR seller_company_role_id IN (${roles}) OR created_by IN (${users})`,
      sql`DELETE FROM kyc_documents WHERE company_id IN (${companies})`,
      sql`DELETE FROM bank_accounts WHERE company_id IN (${companies})`,
      sql`DELETE FROM memberships WHERE user_id IN (${users}) OR company_role_id IN (${roles})`,
      // Idempotency keys name no user (a digest, migration 0013): the demo users' go with retention, within 24 h.
      sql`DELETE FROM token_families WHERE user_id IN (${users})`,
      sql`DELETE FROM company_roles WHERE company_id IN (${companies})`,
    ]) {
      await statement.execute(trx)
    }
    const removedCompanies = await sql`DELETE FROM companies WHERE id IN (${companies})`.execute(trx)
    await sql`DELETE FROM users WHERE id IN (${users})`.execute(trx)
    return { users: found.rows.map((row) => row.email), companies: Number(removedCompanies.numAffectedRows ?? 0) }
  })
}

/** The tables of each handle's schema, read once per handle: truncateAll runs before every test. */
const schemaTables = new WeakMap<Kysely<Database>, Promise<SchemaTable[]>>()

export interface SchemaTable {
  schema: string
  table: string
}

/**
 * The tables of the schema the handle works in (the first schema of its search path that exists:
 * the worker's on PostgreSQL, `public` on PGlite), but Kysely's migration bookkeeping: what a
 * migration creates is in it without a list to edit.
 */
export async function serviceTables(db: Kysely<Database>): Promise<SchemaTable[]> {
  const { rows } = await sql<SchemaTable>`
    SELECT schemaname AS schema, tablename AS table FROM pg_catalog.pg_tables
     WHERE schemaname = current_schema() AND NOT starts_with(tablename, 'kysely_migration')
     ORDER BY tablename`.execute(db)
  return rows
}

/**
 * Empties every table of the handle's schema (the tests reset between cases with it), in one
 * statement. With every table of the schema named no CASCADE is needed, and a table of another
 * schema that references one of them stops it rather than being emptied too. The list is read once
 * per handle: a table created after the first call is left alone until a new handle.
 */
export async function truncateAll(db: Kysely<Database>): Promise<void> {
  let tables = schemaTables.get(db)
  if (!tables) {
    tables = serviceTables(db)
    schemaTables.set(db, tables)
    tables.catch(() => schemaTables.delete(db))
  }
  const names = await tables
  if (names.length > 0) await sql`TRUNCATE ${sql.join(names.map(({ schema, table }) => sql.id(schema, table)))}`.execute(db)
}

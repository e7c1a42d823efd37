import { sql, type Kysely } from 'kysely'

/**
 * The company and marketplace domain: KYC documents and solicitations, bank accounts, customers,
 * chat and presence, titles, bids, operations, title documents and signature envelopes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE kyc_documents (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      company_id uuid NOT NULL REFERENCES companies (id),
      type text NOT NULL CHECK (type IN ('articles_of_association', 'cnpj_card', 'partners_identification',
        'proof_of_address', 'balance_sheet', 'income_statement', 'revenue_statement', 'debt_clearance_certificate')),
      status text NOT NULL CHECK (status IN ('pending_review', 'approved', 'rejected')),
      filename text NOT NULL,
      issued_at date NOT NULL,
      valid_until date,
      reviewed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (valid_until IS NULL OR valid_until >= issued_at)
    )`.execute(db)
  // Route 7 reads the latest document of each type for one company.
  await sql`CREATE INDEX kyc_documents_company_type_idx ON kyc_documents (company_id, type, updated_at DESC)`.execute(db)

  await sql`
    CREATE TABLE document_solicitations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      buyer_company_role_id uuid NOT NULL REFERENCES company_roles (id),
      seller_company_role_id uuid NOT NULL REFERENCES company_roles (id),
      document_types text[] NOT NULL CHECK (cardinality(document_types) > 0),
      message text,
      due_date date,
      status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'fulfilled', 'cancelled')),
      created_by uuid NOT NULL REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      closed_at timestamptz
    )`.execute(db)
  // At most one open solicitation per buyer and seller, whatever the concurrency (route 5's 409).
  await sql`
    CREATE UNIQUE INDEX document_solicitations_one_open_idx
    ON document_solicitations (buyer_company_role_id, seller_company_role_id) WHERE status = 'open'`.execute(db)

  await sql`
    CREATE TABLE bank_accounts (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      company_id uuid NOT NULL REFERENCES companies (id),
      bank_code text NOT NULL CHECK (bank_code ~ '^[0-9]{3}$'),
      branch text NOT NULL CHECK (branch ~ '^[0-9]{4}$'),
      branch_digit text CHECK (branch_digit ~ '^[0-9Xx]$'),
      account_number text NOT NULL CHECK (account_number ~ '^[0-9]{1,20}$'),
      account_digit text NOT NULL CHECK (account_digit ~ '^[0-9Xx]{1,2}$'),
      account_type text NOT NULL CHECK (account_type IN ('checking', 'savings', 'payment')),
      holder_name text NOT NULL,
      holder_tax_id text NOT NULL CHECK (holder_tax_id ~ '^([0-9]{11}|[0-9A-Z]{12}[0-9]{2})$'),
      is_default boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      removed_at timestamptz,
      removed_by uuid REFERENCES users (id),
      CHECK ((removed_at IS NULL) = (removed_by IS NULL)),
      CHECK (NOT (is_default AND removed_at IS NOT NULL))
    )`.execute(db)
  await sql`CREATE INDEX bank_accounts_company_idx ON bank_accounts (company_id) WHERE removed_at IS NULL`.execute(db)
  await sql`
    CREATE UNIQUE INDEX bank_accounts_one_default_idx
    ON bank_accounts (company_id) WHERE is_default AND removed_at IS NULL`.execute(db)

  await sql`
    CREATE TABLE customers (
      id uuid PRIMARY KEY,
      company_role_id uuid NOT NULL REFERENCES company_roles (id),
      name text NOT NULL,
      tax_id text NOT NULL CHECK (tax_id ~ '^([0-9]{11}|[0-9A-Z]{12}[0-9]{2})$'),
      tax_id_type text NOT NULL CHECK (tax_id_type IN ('cpf', 'cnpj')),
      email text,
      phone text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT customers_role_tax_id_key UNIQUE (company_role_id, tax_id)
    )`.execute(db)

  await sql`
    CREATE TABLE chat_conversations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      buyer_company_role_id uuid NOT NULL REFERENCES company_roles (id),
      seller_company_role_id uuid NOT NULL REFERENCES company_roles (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT chat_conversations_pair_key UNIQUE (buyer_company_role_id, seller_company_role_id)
    )`.execute(db)
  await sql`CREATE INDEX chat_conversations_seller_idx ON chat_conversations (seller_company_role_id)`.execute(db)

  // Presence lives apart from company_roles so that its frequent writes do not churn the hot role rows.
  await sql`
    CREATE TABLE company_role_presence (
      company_role_id uuid PRIMARY KEY REFERENCES company_roles (id),
      last_seen_at timestamptz NOT NULL
    )`.execute(db)

  await sql`
    CREATE TABLE titles (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seller_company_role_id uuid NOT NULL REFERENCES company_roles (id),
      payer_customer_id uuid NOT NULL REFERENCES customers (id),
      number text NOT NULL,
      face_value numeric(14, 2) NOT NULL CHECK (face_value > 0),
      issue_date date NOT NULL,
      due_date date NOT NULL,
      nfe_key text CHECK (nfe_key ~ '^[0-9]{44}$'),
      status text NOT NULL CHECK (status IN ('draft', 'listed', 'sold', 'settled', 'cancelled')),
      listed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (due_date >= issue_date),
      CONSTRAINT titles_seller_number_key UNIQUE (seller_company_role_id, number)
    )`.execute(db)
  await sql`CREATE INDEX titles_listed_idx ON titles (listed_at) WHERE status = 'listed'`.execute(db)

  await sql`
    CREATE TABLE bids (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      title_id uuid NOT NULL REFERENCES titles (id),
      buyer_company_role_id uuid NOT NULL REFERENCES company_roles (id),
      monthly_rate numeric(7, 4) NOT NULL CHECK (monthly_rate > 0),
      amount numeric(14, 2) NOT NULL CHECK (amount > 0),
      status text NOT NULL CHECK (status IN ('active', 'withdrawn', 'accepted', 'rejected')),
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
  await sql`CREATE INDEX bids_title_buyer_idx ON bids (title_id, buyer_company_role_id)`.execute(db)

  await sql`
    CREATE TABLE operations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      title_id uuid NOT NULL UNIQUE REFERENCES titles (id),
      buyer_company_role_id uuid NOT NULL REFERENCES company_roles (id),
      payout_bank_account_id uuid NOT NULL REFERENCES bank_accounts (id),
      purchase_price numeric(14, 2) NOT NULL CHECK (purchase_price > 0),
      status text NOT NULL CHECK (status IN ('awaiting_settlement', 'settled', 'cancelled')),
      created_at timestamptz NOT NULL DEFAULT now(),
      settled_at timestamptz
    )`.execute(db)
  await sql`
    CREATE INDEX operations_unsettled_account_idx
    ON operations (payout_bank_account_id) WHERE status = 'awaiting_settlement'`.execute(db)
  await sql`CREATE INDEX operations_buyer_idx ON operations (buyer_company_role_id)`.execute(db)

  await sql`
    CREATE TABLE title_documents (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      title_id uuid NOT NULL REFERENCES titles (id),
      kind text NOT NULL CHECK (kind IN ('invoice', 'nfe_xml', 'assignment_contract', 'payment_slip', 'other')),
      filename text NOT NULL,
      content_type text NOT NULL,
      size_bytes integer NOT NULL CHECK (size_bytes >= 0),
      sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
      uploaded_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
  await sql`CREATE INDEX title_documents_title_idx ON title_documents (title_id, uploaded_at)`.execute(db)

  await sql`
    CREATE TABLE signature_envelopes (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      envelope_key text NOT NULL UNIQUE,
      title_document_id uuid NOT NULL UNIQUE REFERENCES title_documents (id),
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'signed', 'refused', 'cancelled', 'expired')),
      completed_at timestamptz,
      last_event_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)

  await sql`
    CREATE TABLE signature_signers (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      envelope_id uuid NOT NULL REFERENCES signature_envelopes (id),
      position integer NOT NULL,
      name text NOT NULL,
      email text NOT NULL CHECK (email = lower(btrim(email))),
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'signed', 'refused')),
      signed_at timestamptz,
      last_event_at timestamptz,
      CONSTRAINT signature_signers_envelope_email_key UNIQUE (envelope_id, email)
    )`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const tables = [
    'signature_signers',
    'signature_envelopes',
    'title_documents',
    'operations',
    'bids',
    'titles',
    'company_role_presence',
    'chat_conversations',
    'customers',
    'bank_accounts',
    'document_solicitations',
    'kyc_documents',
  ]
  for (const table of tables) await sql`DROP TABLE IF EXISTS ${sql.table(table)}`.execute(db)
}

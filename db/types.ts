import type { ColumnType, Generated, Kysely, Selectable, Transaction } from 'kysely'
import type {
  BankAccountType,
  BidStatus,
  EnvelopeStatus,
  KycReviewStatus,
  KycType,
  MigrationState,
  OperationStatus,
  Permission,
  RevocationReason,
  RoleKind,
  SignerStatus,
  SolicitationStatus,
  TaxIdType,
  TitleDocumentKind,
  TitleStatus,
  WebhookOutcome,
} from '../src/vocabulary.js'

/** A timestamptz column: read as a Date, written as a Date or an SQL expression. */
type Timestamp = ColumnType<Date, Date | string, Date | string>
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>
/** A timestamptz column with a database default. */
type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, never>
/** A date column: read as `YYYY-MM-DD` (see the type parsers in database.ts). */
type DateOnly = string
/** numeric columns are read as decimal strings, never as floats. */
type Decimal = ColumnType<string, string | number, string | number>

export interface UsersTable {
  id: Generated<string>
  email: string
  name: string
  password_hash: string
  is_active: Generated<boolean>
  legacy_id: number | null
  migration_state: MigrationState | null
  last_login: NullableTimestamp
  password_changed_at: NullableTimestamp
  created_at: CreatedAt
  updated_at: DefaultTimestamp
}

export interface CompaniesTable {
  id: Generated<string>
  name: string
  trade_name: string | null
  tax_id: string
  is_active: Generated<boolean>
  created_at: CreatedAt
}

export interface CompanyRolesTable {
  id: Generated<string>
  company_id: string
  role: RoleKind
  is_active: Generated<boolean>
  created_at: CreatedAt
}

export interface MembershipsTable {
  id: Generated<string>
  user_id: string
  company_role_id: string
  permissions: Permission[]
  is_active: Generated<boolean>
  created_at: CreatedAt
}

export interface TokenFamiliesTable {
  id: Generated<string>
  user_id: string
  created_at: CreatedAt
  absolute_expires_at: Timestamp
  revoked_at: NullableTimestamp
  revoked_reason: RevocationReason | null
}

/** A family's rotating part, apart from the row every request reads (migration 0016). */
export interface TokenFamilyRotationsTable {
  family_id: string
  /** The jti of the family's one refresh token that may still be spent (migration 0005). */
  current_refresh_jti: string | null
  /** The jti the last rotation spent, and the term of the successor it made current (migration 0008). */
  previous_refresh_jti: string | null
  current_refresh_issued_at: NullableTimestamp
  current_refresh_expires_at: NullableTimestamp
  /** The family's revoked_at, copied by trigger so that a rotation waiting on this row sees it. */
  family_revoked_at: NullableTimestamp
}

export interface KycDocumentsTable {
  id: Generated<string>
  company_id: string
  type: KycType
  status: KycReviewStatus
  filename: string
  issued_at: DateOnly
  valid_until: DateOnly | null
  reviewed_at: NullableTimestamp
  created_at: CreatedAt
  updated_at: DefaultTimestamp
}

export interface DocumentSolicitationsTable {
  id: Generated<string>
  buyer_company_role_id: string
  seller_company_role_id: string
  document_types: KycType[]
  message: string | null
  due_date: DateOnly | null
  status: Generated<SolicitationStatus>
  created_by: string
  created_at: CreatedAt
  closed_at: NullableTimestamp
}

export interface BankAccountsTable {
  id: Generated<string>
  company_id: string
  bank_code: string
  branch: string
  branch_digit: string | null
  account_number: string
  account_digit: string
  account_type: BankAccountType
  holder_name: string
  holder_tax_id: string
  is_default: Generated<boolean>
  created_at: CreatedAt
  removed_at: NullableTimestamp
  removed_by: string | null
}

export interface CustomersTable {
  id: string
  company_role_id: string
  name: string
  tax_id: string
  tax_id_type: TaxIdType
  email: string | null
  phone: string | null
  created_at: CreatedAt
  updated_at: DefaultTimestamp
}

export interface ChatConversationsTable {
  id: Generated<string>
  buyer_company_role_id: string
  seller_company_role_id: string
  created_at: CreatedAt
}

export interface CompanyRolePresenceTable {
  company_role_id: string
  last_seen_at: Timestamp
}

export interface TitlesTable {
  id: Generated<string>
  seller_company_role_id: string
  payer_customer_id: string
  number: string
  face_value: Decimal
  issue_date: DateOnly
  due_date: DateOnly
  nfe_key: string | null
  status: TitleStatus
  listed_at: NullableTimestamp
  created_at: CreatedAt
  updated_at: DefaultTimestamp
}

export interface BidsTable {
  id: Generated<string>
  title_id: string
  buyer_company_role_id: string
  monthly_rate: Decimal
  amount: Decimal
  status: BidStatus
  created_at: CreatedAt
}

export interface OperationsTable {
  id: Generated<string>
  title_id: string
  buyer_company_role_id: string
  payout_bank_account_id: string
  purchase_price: Decimal
  status: OperationStatus
  created_at: CreatedAt
  settled_at: NullableTimestamp
}

export interface TitleDocumentsTable {
  id: Generated<string>
  title_id: string
  kind: TitleDocumentKind
  filename: string
  content_type: string
  size_bytes: number
  sha256: string
  uploaded_at: DefaultTimestamp
}

export interface SignatureEnvelopesTable {
  id: Generated<string>
  envelope_key: string
  title_document_id: string
  status: Generated<EnvelopeStatus>
  completed_at: NullableTimestamp
  last_event_at: NullableTimestamp
  created_at: CreatedAt
  updated_at: DefaultTimestamp
}

export interface SignatureSignersTable {
  id: Generated<string>
  envelope_id: string
  position: number
  name: string
  email: string
  status: Generated<SignerStatus>
  signed_at: NullableTimestamp
  last_event_at: NullableTimestamp
}

export interface WebhookDeliveriesTable {
  id: Generated<string>
  provider: string
  dedupe_key: string
  raw_body: Buffer | Uint8Array
  received_at: DefaultTimestamp
  event_name: string | null
  envelope_key: string | null
  occurred_at: NullableTimestamp
  outcome: WebhookOutcome | null
  processed_at: NullableTimestamp
}

/** The first answer to an `Idempotency-Key` (migration 0009, src/idempotency/). */
export interface IdempotencyKeysTable {
  /** SHA-256 of (scope, route, SHA-256 of the key): src/idempotency/repository.ts's keyId (migration 0013). */
  key_id: Buffer | Uint8Array
  /** 16 bytes of the request's HMAC under the key. */
  fingerprint: Buffer | Uint8Array
  /** Written with the work it answers, in its transaction (migration 0010). */
  status: number
  answer: Buffer | Uint8Array
  created_at: DefaultTimestamp
}

/** The mark of a production database (migration 0010): `seed` refuses the demo data there. */
export interface DeploymentMarksTable {
  name: 'production'
  marked_by: 'migrate' | 'service'
  marked_at: DefaultTimestamp
}

/** The deployment's kid cut-over (migration 0015): one row. */
export interface KidCutoverTable {
  one: Generated<boolean>
  cut_over_at: DefaultTimestamp
}

export interface Database {
  users: UsersTable
  companies: CompaniesTable
  company_roles: CompanyRolesTable
  memberships: MembershipsTable
  token_families: TokenFamiliesTable
  token_family_rotations: TokenFamilyRotationsTable
  kyc_documents: KycDocumentsTable
  document_solicitations: DocumentSolicitationsTable
  bank_accounts: BankAccountsTable
  customers: CustomersTable
  chat_conversations: ChatConversationsTable
  company_role_presence: CompanyRolePresenceTable
  titles: TitlesTable
  bids: BidsTable
  operations: OperationsTable
  title_documents: TitleDocumentsTable
  signature_envelopes: SignatureEnvelopesTable
  signature_signers: SignatureSignersTable
  webhook_deliveries: WebhookDeliveriesTable
  idempotency_keys: IdempotencyKeysTable
  deployment_marks: DeploymentMarksTable
  kid_cutover: KidCutoverTable
}

/** What repository functions take: the app's Kysely instance or an open transaction. */
export type Db = Kysely<Database> | Transaction<Database>

export type User = Selectable<UsersTable>

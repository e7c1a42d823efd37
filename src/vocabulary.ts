/**
 * The service's words: every enumerated value the database, the rules and the API share, spelled
 * once. The TypeScript types below and the TypeBox enums in schemas/ both derive from these
 * arrays. This module imports nothing, so schemas/ and db/ may import it (see .dependency-cruiser.cjs).
 */

/** A company role's kind (docs/api.md §3). */
export const ROLE_KINDS = ['seller', 'buyer'] as const
export type RoleKind = (typeof ROLE_KINDS)[number]

/** A membership's permissions; `admin` grants all (§3). */
export const PERMISSIONS = ['documents', 'bank_accounts', 'customers', 'marketplace', 'chat', 'admin'] as const
export type Permission = (typeof PERMISSIONS)[number]

/** A user migrated from the old platform: `pending` until they confirm their account (route 10). */
export const MIGRATION_STATES = ['pending', 'confirmed'] as const
export type MigrationState = (typeof MIGRATION_STATES)[number]

/** Validity in days from the issue date of each required KYC type (null: no expiry), §4 route 7. */
export const KYC_VALIDITY_DAYS = {
  articles_of_association: null,
  cnpj_card: 90,
  partners_identification: null,
  proof_of_address: 90,
  balance_sheet: 365,
  income_statement: 365,
  revenue_statement: 90,
  debt_clearance_certificate: 180,
} as const satisfies Record<string, number | null>
export type KycType = keyof typeof KYC_VALIDITY_DAYS

/** Every required KYC type, in the order route 7 lists them. */
export const KYC_TYPES = Object.keys(KYC_VALIDITY_DAYS) as KycType[]

/** A stored KYC document's review state. */
export const KYC_REVIEW_STATUSES = ['pending_review', 'approved', 'rejected'] as const
export type KycReviewStatus = (typeof KYC_REVIEW_STATUSES)[number]

/** A required type's state as route 7 shows it: a review state, or `expired` / `missing`. */
export const KYC_CHECK_STATUSES = ['approved', 'pending_review', 'rejected', 'expired', 'missing'] as const
export type KycCheckStatus = (typeof KYC_CHECK_STATUSES)[number]

export const SOLICITATION_STATUSES = ['open', 'fulfilled', 'cancelled'] as const
export type SolicitationStatus = (typeof SOLICITATION_STATUSES)[number]

/** A chat partner's presence (§4 route 6). */
export const PRESENCE_STATUSES = ['online', 'away', 'offline'] as const
export type PresenceStatus = (typeof PRESENCE_STATUSES)[number]

export const TAX_ID_TYPES = ['cpf', 'cnpj'] as const
export type TaxIdType = (typeof TAX_ID_TYPES)[number]

/** What a title document is (§4 route 9). */
export const TITLE_DOCUMENT_KINDS = ['invoice', 'nfe_xml', 'assignment_contract', 'payment_slip', 'other'] as const
export type TitleDocumentKind = (typeof TITLE_DOCUMENT_KINDS)[number]

/** An e-signature envelope's state; every one but `pending` is final (§4 route 12). */
export const ENVELOPE_STATUSES = ['pending', 'signed', 'refused', 'cancelled', 'expired'] as const
export type EnvelopeStatus = (typeof ENVELOPE_STATUSES)[number]

export const SIGNER_STATUSES = ['pending', 'signed', 'refused'] as const
export type SignerStatus = (typeof SIGNER_STATUSES)[number]

// Stored and read, but shown by no route.

export const BANK_ACCOUNT_TYPES = ['checking', 'savings', 'payment'] as const
export type BankAccountType = (typeof BANK_ACCOUNT_TYPES)[number]

/** A title's life on the marketplace; a `listed` one is visible to every buyer (route 9). */
export const TITLE_STATUSES = ['draft', 'listed', 'sold', 'settled', 'cancelled'] as const
export type TitleStatus = (typeof TITLE_STATUSES)[number]

export const BID_STATUSES = ['active', 'withdrawn', 'accepted', 'rejected'] as const
export type BidStatus = (typeof BID_STATUSES)[number]

/** An operation `awaiting_settlement` pays into its bank account, which route 8 then keeps. */
export const OPERATION_STATUSES = ['awaiting_settlement', 'settled', 'cancelled'] as const
export type OperationStatus = (typeof OPERATION_STATUSES)[number]

/** Why a refresh-token family was revoked (§2). */
export const REVOCATION_REASONS = ['reuse', 'password_changed', 'user_disabled', 'logout'] as const
export type RevocationReason = (typeof REVOCATION_REASONS)[number]

/** What a stored e-signature delivery did (route 12). */
export const WEBHOOK_OUTCOMES = ['applied', 'ignored', 'unmatched'] as const
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number]

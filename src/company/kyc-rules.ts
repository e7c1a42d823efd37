import type { KycType } from '../db/types.js'

/** Validity in days from the issue date of each required KYC type (null: no expiry), CONTRACT.md §4 route 7. */
export const KYC_VALIDITY_DAYS: Record<KycType, number | null> = {
  articles_of_association: null,
  cnpj_card: 90,
  partners_identification: null,
  proof_of_address: 90,
  balance_sheet: 365,
  income_statement: 365,
  revenue_statement: 90,
  debt_clearance_certificate: 180,
}

/** Every required type, in the order route 7 lists them. */
export const KYC_TYPES = Object.keys(KYC_VALIDITY_DAYS) as KycType[]

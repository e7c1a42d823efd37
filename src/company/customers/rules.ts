import type { CustomerRequest } from '../../../schemas/customers.js'
import { classifyTaxId, normaliseTaxId } from '../../lib/tax-id.js'
import type { TaxIdType } from '../../vocabulary.js'

/** Route 11's body after the schema has checked its types and lengths. */
export type CustomerBody = CustomerRequest

/** A customer as stored: tax id normalised and classified, absent contacts as null. */
export interface CustomerInput {
  name: string
  tax_id: string
  tax_id_type: TaxIdType
  email: string | null
  phone: string | null
}

export type CustomerValidation = { ok: true; value: CustomerInput } | { ok: false; errors: Record<string, string[]> }

const CPF_SHAPE = /^[0-9]{11}$/
const CNPJ_SHAPE = /^[0-9A-Z]{12}[0-9]{2}$/
/** E.164: a plus sign, a country code that does not start with 0, at most 15 digits in all. */
const E164 = /^\+[1-9][0-9]{7,14}$/

/** A message when the normalised tax id is not a valid CPF or CNPJ, else undefined. */
export function taxIdProblem(taxId: string): string | undefined {
  if (classifyTaxId(taxId)) return undefined
  if (CPF_SHAPE.test(taxId)) return 'Not a valid CPF: the check digits do not match.'
  if (CNPJ_SHAPE.test(taxId)) return 'Not a valid CNPJ: the check digits do not match.'
  return 'Must be a CPF (11 digits) or a CNPJ (14 characters: 12 letters or digits, then 2 check digits).'
}

/**
 * The phone in E.164 (`+5511987654321`), with the spaces, dots, hyphens and parentheses people
 * type removed; undefined when it is not an international number. A number without a country code
 * is refused rather than guessed.
 */
export function normalisePhone(raw: string): string | undefined {
  const phone = raw.replace(/[\s.()-]/g, '')
  return E164.test(phone) ? phone : undefined
}

/**
 * The checks the schema cannot make: tax id check digits and phone format. Every problem is
 * reported at once, per field, as the contract's validation errors.
 */
export function validateCustomer(body: CustomerBody): CustomerValidation {
  const errors: Record<string, string[]> = {}
  const taxId = normaliseTaxId(body.tax_id)
  const taxIdType = classifyTaxId(taxId)
  const taxIdMessage = taxIdProblem(taxId)
  if (taxIdMessage) errors.tax_id = [taxIdMessage]
  const phone = body.phone == null ? null : normalisePhone(body.phone)
  if (phone === undefined) errors.phone = ['Must be an international phone number in E.164 format, such as +5511987654321.']
  if (!taxIdType || phone === undefined) return { ok: false, errors }
  return { ok: true, value: { name: body.name, tax_id: taxId, tax_id_type: taxIdType, email: body.email ?? null, phone } }
}

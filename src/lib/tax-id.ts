/** Brazilian tax identifiers: CPF (people), CNPJ (companies, alphanumeric since July 2026), NF-e keys. */

import type { TaxIdType } from '../vocabulary.js'

/** Strips the punctuation people type (`.`, `-`, `/`, spaces) and upper-cases letters. */
export function normaliseTaxId(raw: string): string {
  return raw.replace(/[\s./-]/g, '').toUpperCase()
}

function mod11Digit(sum: number): number {
  const rest = sum % 11
  return rest < 2 ? 0 : 11 - rest
}

function weightedSum(values: number[], weights: number[]): number {
  return values.reduce((sum, value, index) => sum + value * (weights[index] ?? 0), 0)
}

export function isValidCpf(cpf: string): boolean {
  if (!/^[0-9]{11}$/.test(cpf) || /^(\d)\1{10}$/.test(cpf)) return false
  const digits = [...cpf].map(Number)
  const first = mod11Digit(weightedSum(digits.slice(0, 9), [10, 9, 8, 7, 6, 5, 4, 3, 2]))
  const second = mod11Digit(weightedSum(digits.slice(0, 10), [11, 10, 9, 8, 7, 6, 5, 4, 3, 2]))
  return digits[9] === first && digits[10] === second
}

const CNPJ_WEIGHTS = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]

/** Check digits of a CNPJ's first 12 characters; letters count as their ASCII code minus 48. */
export function cnpjCheckDigits(base: string): string {
  const values = [...base].map((char) => char.charCodeAt(0) - 48)
  const first = mod11Digit(weightedSum(values, CNPJ_WEIGHTS.slice(1)))
  const second = mod11Digit(weightedSum([...values, first], CNPJ_WEIGHTS))
  return `${first}${second}`
}

export function isValidCnpj(cnpj: string): boolean {
  if (!/^[0-9A-Z]{12}[0-9]{2}$/.test(cnpj) || /^(.)\1{13}$/.test(cnpj)) return false
  return cnpjCheckDigits(cnpj.slice(0, 12)) === cnpj.slice(12)
}

/** The type of a normalised, valid tax id, or undefined when it is neither a valid CPF nor CNPJ. */
export function classifyTaxId(taxId: string): TaxIdType | undefined {
  if (isValidCpf(taxId)) return 'cpf'
  if (isValidCnpj(taxId)) return 'cnpj'
  return undefined
}

/** Check digit (modulo 11, weights 2 to 9 from the right) of an NF-e access key's first 43 digits. */
export function nfeKeyCheckDigit(first43: string): number {
  let sum = 0
  let weight = 2
  for (let index = first43.length - 1; index >= 0; index -= 1) {
    sum += Number(first43[index]) * weight
    weight = weight === 9 ? 2 : weight + 1
  }
  const rest = sum % 11
  return rest < 2 ? 0 : 11 - rest
}

export function isValidNfeKey(key: string): boolean {
  return /^[0-9]{44}$/.test(key) && nfeKeyCheckDigit(key.slice(0, 43)) === Number(key[43])
}

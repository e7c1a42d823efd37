import { describe, expect, it } from 'vitest'
import { KYC_TYPES } from '../../src/vocabulary.js'
import { documentStatus, inChecklistOrder, kycChecklist, typesNotApproved, utcToday, type LatestKycDocument } from '../../src/company/kyc/status.js'
import type { KycType } from '../../src/vocabulary.js'

const TODAY = '2026-05-10'
const updatedAt = '2026-05-01T12:00:00.000Z'

const document = (type: KycType, overrides: Partial<LatestKycDocument> = {}): LatestKycDocument => ({
  id: `id-${type}`,
  type,
  status: 'approved',
  valid_until: null,
  updated_at: updatedAt,
  ...overrides,
})

const allApproved = () => KYC_TYPES.map((type) => document(type, { valid_until: '2026-12-31' }))

describe('documentStatus', () => {
  it('is missing without a document', () => {
    expect(documentStatus(undefined, TODAY)).toBe('missing')
  })

  it('keeps approved without expiry, and through the valid_until day itself', () => {
    expect(documentStatus(document('articles_of_association'), TODAY)).toBe('approved')
    expect(documentStatus(document('cnpj_card', { valid_until: TODAY }), TODAY)).toBe('approved')
    expect(documentStatus(document('cnpj_card', { valid_until: '2026-05-11' }), TODAY)).toBe('approved')
  })

  it('is expired for an approved document whose valid_until is before today', () => {
    expect(documentStatus(document('balance_sheet', { valid_until: '2026-05-09' }), TODAY)).toBe('expired')
    expect(documentStatus(document('balance_sheet', { valid_until: '2025-12-31' }), TODAY)).toBe('expired')
  })

  it('keeps pending_review and rejected as they are, even past valid_until', () => {
    expect(documentStatus(document('cnpj_card', { status: 'pending_review', valid_until: '2026-01-01' }), TODAY)).toBe('pending_review')
    expect(documentStatus(document('cnpj_card', { status: 'rejected', valid_until: '2026-01-01' }), TODAY)).toBe('rejected')
    expect(documentStatus(document('cnpj_card', { status: 'rejected' }), TODAY)).toBe('rejected')
  })
})

describe('kycChecklist', () => {
  it('lists every required type once, in KYC_TYPES order, whatever the input order', () => {
    const checklist = kycChecklist([...allApproved()].reverse(), TODAY)
    expect(checklist.documents.map((row) => row.type)).toEqual(KYC_TYPES)
    expect(checklist.complete).toBe(true)
    expect(checklist.documents[1]).toEqual({
      type: 'cnpj_card',
      status: 'approved',
      document_id: 'id-cnpj_card',
      valid_until: '2026-12-31',
      updated_at: updatedAt,
    })
  })

  it('fills missing types with nulls and is not complete', () => {
    const checklist = kycChecklist([document('cnpj_card')], TODAY)
    expect(checklist.complete).toBe(false)
    expect(checklist.documents.find((row) => row.type === 'balance_sheet')).toEqual({
      type: 'balance_sheet',
      status: 'missing',
      document_id: null,
      valid_until: null,
      updated_at: null,
    })
  })

  it('is not complete when a single type is expired, pending or rejected', () => {
    for (const overrides of [{ valid_until: '2026-05-09' }, { status: 'pending_review' as const }, { status: 'rejected' as const }]) {
      const documents = allApproved().map((row) => (row.type === 'income_statement' ? { ...row, ...overrides } : row))
      expect(kycChecklist(documents, TODAY).complete).toBe(false)
    }
  })

  it('is not complete for a company without documents', () => {
    const checklist = kycChecklist([], TODAY)
    expect(checklist.complete).toBe(false)
    expect(checklist.documents.every((row) => row.status === 'missing')).toBe(true)
  })
})

describe('typesNotApproved', () => {
  it('takes every type that is not approved, expired included, in order', () => {
    const documents = allApproved()
      .filter((row) => row.type !== 'proof_of_address')
      .map((row) => (row.type === 'balance_sheet' ? { ...row, valid_until: '2026-01-01' } : row))
      .map((row) => (row.type === 'cnpj_card' ? { ...row, status: 'rejected' as const } : row))
    expect(typesNotApproved(kycChecklist(documents, TODAY))).toEqual(['cnpj_card', 'proof_of_address', 'balance_sheet'])
  })

  it('is empty when everything is approved', () => {
    expect(typesNotApproved(kycChecklist(allApproved(), TODAY))).toEqual([])
  })
})

describe('inChecklistOrder', () => {
  it('orders requested types as the checklist lists them', () => {
    expect(inChecklistOrder(['debt_clearance_certificate', 'cnpj_card', 'balance_sheet'])).toEqual([
      'cnpj_card',
      'balance_sheet',
      'debt_clearance_certificate',
    ])
  })
})

describe('utcToday', () => {
  it('takes the UTC date, not the local one', () => {
    expect(utcToday(new Date('2026-05-10T23:30:00-03:00'))).toBe('2026-05-11')
    expect(utcToday(new Date('2026-05-10T00:00:00.000Z'))).toBe('2026-05-10')
  })
})

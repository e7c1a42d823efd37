import { describe, expect, it } from 'vitest'
import { normalisePhone, taxIdProblem, validateCustomer } from '../../src/company/customers/rules.js'

describe('validateCustomer', () => {
  it('normalises and classifies the tax id, and stores absent contacts as null', () => {
    expect(validateCustomer({ name: 'Zeta', tax_id: '529.982.247-25' })).toEqual({
      ok: true,
      value: { name: 'Zeta', tax_id: '52998224725', tax_id_type: 'cpf', email: null, phone: null },
    })
    expect(validateCustomer({ name: 'Delta', tax_id: '12.abc.345/01de-35', email: 'a@b.example', phone: '+55 (11) 98765-4321' })).toEqual({
      ok: true,
      value: { name: 'Delta', tax_id: '12ABC34501DE35', tax_id_type: 'cnpj', email: 'a@b.example', phone: '+5511987654321' },
    })
  })

  it('reports every field that fails at once', () => {
    expect(validateCustomer({ name: 'Zeta', tax_id: '11.222.333/0001-82', phone: '11987654321' })).toEqual({
      ok: false,
      errors: {
        tax_id: ['Not a valid CNPJ: the check digits do not match.'],
        phone: ['Must be an international phone number in E.164 format, such as +5511987654321.'],
      },
    })
  })
})

describe('taxIdProblem', () => {
  it('accepts a valid CPF and CNPJ, numeric or alphanumeric', () => {
    for (const taxId of ['52998224725', '11222333000181', '12ABC34501DE35']) expect(taxIdProblem(taxId)).toBeUndefined()
  })

  it('names the check digits for a CPF- or CNPJ-shaped id, and the shape for anything else', () => {
    expect(taxIdProblem('52998224724')).toMatch(/CPF: the check digits/)
    expect(taxIdProblem('11111111111')).toMatch(/CPF: the check digits/)
    expect(taxIdProblem('12ABC34501DE36')).toMatch(/CNPJ: the check digits/)
    for (const taxId of ['', '123', '5299822472', '529982247250', '12ABC34501DEAB', '12ABC34501DE3', '529982247-2X']) {
      expect(taxIdProblem(taxId)).toMatch(/^Must be a CPF/)
    }
  })
})

describe('normalisePhone', () => {
  it('keeps E.164 and removes the punctuation people type', () => {
    expect(normalisePhone('+551130000001')).toBe('+551130000001')
    expect(normalisePhone('+55 (11) 98765-4321')).toBe('+5511987654321')
    expect(normalisePhone('+1.415.555.2671')).toBe('+14155552671')
  })

  it('refuses numbers without a country code, too short or too long, and letters', () => {
    for (const phone of ['11987654321', '(11) 98765-4321', '+0551130000001', '+1234567', '+1234567890123456', '+55 11 CALL-NOW', '', '+']) {
      expect(normalisePhone(phone)).toBeUndefined()
    }
  })
})

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { classifyTaxId, cnpjCheckDigits, isValidCnpj, isValidCpf, isValidNfeKey, nfeKeyCheckDigit, normaliseTaxId } from '../../src/lib/tax-id.js'

describe('normaliseTaxId', () => {
  it('strips the punctuation people type and upper-cases letters', () => {
    expect(normaliseTaxId('529.982.247-25')).toBe('52998224725')
    expect(normaliseTaxId(' 11.222.333/0001-81 ')).toBe('11222333000181')
    expect(normaliseTaxId('12.abc.345/01de-35')).toBe('12ABC34501DE35')
  })
})

describe('isValidCpf', () => {
  it('accepts CPFs whose check digits match', () => {
    for (const cpf of ['52998224725', '12345678909', '11144477735']) expect(isValidCpf(cpf)).toBe(true)
  })

  it('refuses a wrong check digit, a wrong length, letters and repeated digits', () => {
    expect(isValidCpf('52998224724')).toBe(false)
    expect(isValidCpf('52998224715')).toBe(false)
    expect(isValidCpf('5299822472')).toBe(false)
    expect(isValidCpf('529982247250')).toBe(false)
    expect(isValidCpf('5299822472A')).toBe(false)
    // 111.111.111-11 passes the arithmetic but is not a CPF.
    expect(isValidCpf('11111111111')).toBe(false)
    expect(isValidCpf('00000000000')).toBe(false)
  })
})

describe('isValidCnpj', () => {
  it('accepts numeric CNPJs whose check digits match', () => {
    for (const cnpj of ['11222333000181', '28456789000109', '33445566000186', '45678912000155']) {
      expect(isValidCnpj(cnpj)).toBe(true)
    }
  })

  it("accepts the Receita Federal's alphanumeric example 12.ABC.345/01DE-35", () => {
    expect(cnpjCheckDigits('12ABC34501DE')).toBe('35')
    expect(isValidCnpj('12ABC34501DE35')).toBe(true)
  })

  it('refuses wrong check digits, lower case, letters in the check digits and repeated characters', () => {
    expect(isValidCnpj('12ABC34501DE36')).toBe(false)
    expect(isValidCnpj('12ABC34501DE53')).toBe(false)
    expect(isValidCnpj('11222333000182')).toBe(false)
    expect(isValidCnpj('12abc34501de35')).toBe(false)
    expect(isValidCnpj('12ABC34501DEAB')).toBe(false)
    expect(isValidCnpj('1122233300018')).toBe(false)
    expect(isValidCnpj('00000000000000')).toBe(false)
  })

  it('validates every base completed with its own check digits, and no other digits', () => {
    const base = fc.string({ unit: fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'), minLength: 12, maxLength: 12 })
    fc.assert(
      fc.property(base, fc.integer({ min: 0, max: 99 }), (prefix, other) => {
        const digits = cnpjCheckDigits(prefix)
        const candidate = String(other).padStart(2, '0')
        const repeated = /^(.)\1{13}$/.test(prefix + digits)
        expect(isValidCnpj(prefix + digits)).toBe(!repeated)
        if (candidate !== digits) expect(isValidCnpj(prefix + candidate)).toBe(false)
      }),
    )
  })
})

describe('classifyTaxId', () => {
  it('tells a CPF from a CNPJ and refuses anything else', () => {
    expect(classifyTaxId('52998224725')).toBe('cpf')
    expect(classifyTaxId('11222333000181')).toBe('cnpj')
    expect(classifyTaxId('12ABC34501DE35')).toBe('cnpj')
    expect(classifyTaxId('52998224724')).toBeUndefined()
    expect(classifyTaxId('12ABC34501DE36')).toBeUndefined()
    expect(classifyTaxId('')).toBeUndefined()
  })
})

describe('NF-e access key', () => {
  // The worked example of the NF-e integration manual: its check digit is 5.
  const manualExample = '5206043300991100250655012000000780026730161'

  it('computes the check digit of the manual example', () => {
    expect(nfeKeyCheckDigit(manualExample)).toBe(5)
    expect(isValidNfeKey(`${manualExample}5`)).toBe(true)
  })

  it('weighs 2 to 9 from the right, cycling, and maps remainders 0 and 1 to 0', () => {
    const key = (tail: string) => tail.padStart(43, '0')
    expect(nfeKeyCheckDigit(key('1'))).toBe(9) // sum 2 → 11 - 2
    expect(nfeKeyCheckDigit(key('100000000'))).toBe(9) // the 9th from the right weighs 2 again
    expect(nfeKeyCheckDigit(key('10000000'))).toBe(2) // the 8th weighs 9 → 11 - 9
    expect(nfeKeyCheckDigit(key('210'))).toBe(0) // sum 11, remainder 0
    expect(nfeKeyCheckDigit(key('6'))).toBe(0) // sum 12, remainder 1
  })

  it('refuses a wrong check digit, a wrong length and letters', () => {
    expect(isValidNfeKey(`${manualExample}4`)).toBe(false)
    expect(isValidNfeKey(manualExample)).toBe(false)
    expect(isValidNfeKey(`${manualExample}50`)).toBe(false)
    expect(isValidNfeKey(`A${manualExample.slice(1)}5`)).toBe(false)
  })
})

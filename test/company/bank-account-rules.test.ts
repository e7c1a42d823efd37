import { describe, expect, it } from 'vitest'
import { removalBlocker, successorDefault, type ActiveBankAccount } from '../../src/company/bank-accounts/rules.js'

const account = (id: string, createdAt: string, isDefault = false): ActiveBankAccount => ({
  id,
  is_default: isDefault,
  created_at: new Date(createdAt),
})

const oldest = account('00000000-0000-4000-8000-00000000000c', '2026-01-01T00:00:00.000Z', true)
const middleB = account('00000000-0000-4000-8000-00000000000b', '2026-02-01T00:00:00.000Z')
const middleA = account('00000000-0000-4000-8000-00000000000a', '2026-02-01T00:00:00.000Z')
const newest = account('00000000-0000-4000-8000-000000000001', '2026-03-01T00:00:00.000Z')

describe('removalBlocker', () => {
  it('lets a free account go while another active account remains', () => {
    expect(removalBlocker([oldest, newest], false)).toBeUndefined()
  })

  it('keeps the only active account', () => {
    expect(removalBlocker([oldest], false)).toBe('last_bank_account')
  })

  it('keeps an account an unsettled operation pays into, and says so even when it is also the last', () => {
    expect(removalBlocker([oldest, newest], true)).toBe('bank_account_in_use')
    expect(removalBlocker([oldest], true)).toBe('bank_account_in_use')
  })
})

describe('successorDefault', () => {
  it('moves the default to the oldest other account, whatever the order given', () => {
    expect(successorDefault([newest, middleB, oldest], oldest)).toBe(middleB.id)
    expect(successorDefault([oldest, middleB, newest], oldest)).toBe(middleB.id)
    expect(successorDefault([oldest, newest], oldest)).toBe(newest.id)
  })

  it('breaks a tie of creation time by id', () => {
    expect(successorDefault([newest, middleB, oldest, middleA], oldest)).toBe(middleA.id)
    expect(successorDefault([middleA, oldest, middleB], oldest)).toBe(middleA.id)
  })

  it('leaves the default alone when the removed account was not the default', () => {
    expect(successorDefault([oldest, middleA, newest], newest)).toBeUndefined()
    expect(successorDefault([oldest, middleA, newest], middleA)).toBeUndefined()
  })

  it('names nobody when no other account remains', () => {
    expect(successorDefault([oldest], oldest)).toBeUndefined()
  })
})

import { describe, expect, it } from 'vitest'
import { illFormedTextPath } from '../../src/lib/well-formed-json.js'

describe('illFormedTextPath', () => {
  it('finds nothing in well-formed text, surrogate pairs included', () => {
    expect(illFormedTextPath({ name: 'Zeta 😀 Ltda', tags: ['ﬀ', '\ud83d\ude00'], n: 1, none: null })).toBeUndefined()
    expect(illFormedTextPath('plain')).toBeUndefined()
  })

  it('names the first string with a lone high or low surrogate, through objects and arrays', () => {
    expect(illFormedTextPath({ document: { key: 'ﬀ\udc00ab' } })).toBe('document.key')
    expect(illFormedTextPath({ items: ['ok', 'a\ud800'] })).toBe('items.1')
    expect(illFormedTextPath({ a: '\ude00\ud83d' })).toBe('a') // a pair in the wrong order is two lone ones
    expect(illFormedTextPath('\ud800')).toBe('non_field_errors')
  })

  it('names the object holding a key with a lone surrogate, never the key itself', () => {
    expect(illFormedTextPath({ data: { ['x\udfff']: 1 } })).toBe('data')
    expect(illFormedTextPath({ ['x\udfff']: 1 })).toBe('non_field_errors')
  })
})

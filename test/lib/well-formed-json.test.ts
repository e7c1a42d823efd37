import { describe, expect, it } from 'vitest'
import { illFormedTextPath, nestsDeeperThan } from '../../src/lib/well-formed-json.js'

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

  it('names the first in document order, a bad key or a bad string', () => {
    expect(illFormedTextPath({ a: { b: 'x\ud800' }, ['c\udfff']: 1 })).toBe('a.b')
    expect(illFormedTextPath({ ['c\udfff']: 1, a: { b: 'x\ud800' } })).toBe('non_field_errors')
    expect(illFormedTextPath([1, null, true, [{ k: ['ok', 2, 'z\udc00'] }]])).toBe('3.0.k.2')
  })

  it('walks a value 100,000 levels deep in one pass, without the call stack', () => {
    let value: unknown = 'a\ud800'
    for (let level = 0; level < 100_000; level += 1) value = [value]
    const started = performance.now()
    expect(illFormedTextPath({ deep: value })?.split('.')).toHaveLength(100_001)
    expect(performance.now() - started).toBeLessThan(1_000)
  })
})

describe('nestsDeeperThan', () => {
  it('counts arrays and objects, not brackets in strings or escaped quotes', () => {
    expect(nestsDeeperThan('{"a":[{"b":[]}]}', 4)).toBe(false)
    expect(nestsDeeperThan('{"a":[{"b":[]}]}', 3)).toBe(true)
    expect(nestsDeeperThan('{"a":"[[[[{{{{"}', 1)).toBe(false)
    // An escaped backslash ends before the quote, which closes the string; an escaped quote does not.
    expect(nestsDeeperThan('{"a":"\\\\","b":[[1]]}', 2)).toBe(true)
    expect(nestsDeeperThan('{"a":"\\\\\\"[[["}', 1)).toBe(false)
    expect(nestsDeeperThan('[[],[],[[]]]', 3)).toBe(false)
    expect(nestsDeeperThan('[[],[],[[[]]]]', 3)).toBe(true)
  })
})

import { describe, expect, it } from 'vitest'
import { VerifiedTokenCache, type TokenClaims } from '../../src/tokens/tokens.js'

const claims = (exp: number): TokenClaims => ({
  token_type: 'access',
  exp,
  iat: exp - 300,
  jti: '0'.repeat(32),
  user_id: '10000000-0000-4000-8000-000000000001',
  fid: '10000000-0000-4000-8000-000000000002',
})

describe('the verified access-token cache', () => {
  it('gives back a token until its exp second has passed, then forgets it', () => {
    const cache = new VerifiedTokenCache(10)
    cache.set('a.b.c', claims(1_000))
    expect(cache.get('a.b.c', 1_000_000)).toEqual(claims(1_000))
    expect(cache.get('a.b.c', 1_000_001)).toBeUndefined()
    // Forgotten, not only hidden: the clock going back does not bring it back.
    expect(cache.get('a.b.c', 999_000)).toBeUndefined()
  })

  it('knows a token only by its exact text', () => {
    const cache = new VerifiedTokenCache(10)
    cache.set('a.b.c', claims(1_000))
    expect(cache.get('a.b.C', 0)).toBeUndefined()
  })

  it('holds at most its capacity, dropping the oldest entry first', () => {
    const cache = new VerifiedTokenCache(2)
    cache.set('one', claims(1_000))
    cache.set('two', claims(1_000))
    cache.set('three', claims(1_000))
    expect(['one', 'two', 'three'].map((token) => cache.get(token, 0) !== undefined)).toEqual([false, true, true])
  })

  it('keeps nothing with no capacity', () => {
    const cache = new VerifiedTokenCache(0)
    cache.set('one', claims(1_000))
    expect(cache.get('one', 0)).toBeUndefined()
  })
})

import { describe, expect, it } from 'vitest'
import {
  checkToken,
  decodeUid,
  encodeUid,
  formatLastLogin,
  fromBase36,
  makeToken,
  toBase36,
  tokenTimestamp,
  type LinkSubject,
} from '../../src/registration/legacy-token.js'

// The vectors were computed with Django's own algorithm (salted_hmac, SHA-256, hexdigest[::2]).
const SUBJECT: LinkSubject = {
  hashId: '42',
  passwordHash: 'pbkdf2_sha256$260000$fixedsalt$AAAA',
  lastLogin: new Date('2024-01-02T03:04:05.678Z'),
  email: 'alice@example.com',
}
const AT = new Date('2024-06-01T00:00:00Z')
const TOKEN = 'c7x1c0-79eb61cae1f7b2cc3d617c532056154c'
const TOKEN_NEVER_LOGGED_IN = 'c7x1c0-ffa939eb02e18a1182e55a72007a3d82'
const DAY = 86_400
const check = (overrides: Partial<Parameters<typeof checkToken>[2]> = {}) => ({
  secrets: ['test-secret'],
  ttlSeconds: 3 * DAY,
  now: AT,
  ...overrides,
})
const later = (seconds: number) => new Date(AT.getTime() + seconds * 1000)

describe('Django PasswordResetTokenGenerator tokens', () => {
  it('matches the reference vectors', () => {
    expect(makeToken(SUBJECT, 'test-secret', AT)).toBe(TOKEN)
    expect(makeToken({ ...SUBJECT, lastLogin: null }, 'test-secret', AT)).toBe(TOKEN_NEVER_LOGGED_IN)
  })

  it('counts seconds from 2001-01-01 UTC and writes them in base36', () => {
    expect(tokenTimestamp(new Date('2001-01-01T00:00:00Z'))).toBe(0)
    expect(tokenTimestamp(AT)).toBe(738_892_800)
    expect(toBase36(738_892_800)).toBe('c7x1c0')
    expect(toBase36(0)).toBe('0')
    expect(fromBase36('c7x1c0')).toBe(738_892_800)
    expect(fromBase36('zz')).toBe(35 * 36 + 35)
  })

  it('refuses base36 that Django would refuse or that is not canonical', () => {
    expect(fromBase36('')).toBeUndefined()
    expect(fromBase36('C7X1C0')).toBeUndefined()
    expect(fromBase36('-1')).toBeUndefined()
    expect(fromBase36('1'.repeat(14))).toBeUndefined()
    expect(fromBase36('zzzzzzzzzzzzz')).toBeUndefined() // 13 digits, beyond a safe integer
  })

  it('formats last_login as Python prints it, in UTC, without fractions', () => {
    expect(formatLastLogin(new Date('2024-01-02T03:04:05.999Z'))).toBe('2024-01-02 03:04:05')
    expect(formatLastLogin(null)).toBe('')
  })

  it('accepts its own token within the TTL and a timestamp slightly in the future', () => {
    expect(checkToken(SUBJECT, TOKEN, check())).toBe(true)
    expect(checkToken(SUBJECT, TOKEN, check({ now: later(3 * DAY) }))).toBe(true)
    expect(checkToken(SUBJECT, TOKEN, check({ now: later(-60) }))).toBe(true)
  })

  it('refuses an expired token and one from too far in the future', () => {
    expect(checkToken(SUBJECT, TOKEN, check({ now: later(3 * DAY + 1) }))).toBe(false)
    expect(checkToken(SUBJECT, TOKEN, check({ now: later(-3600) }))).toBe(false)
  })

  it('accepts a token made with a fallback secret and refuses an unknown secret', () => {
    const secrets = ['new-secret', 'test-secret']
    expect(checkToken(SUBJECT, TOKEN, check({ secrets }))).toBe(true)
    expect(checkToken(SUBJECT, TOKEN, check({ secrets: ['new-secret'] }))).toBe(false)
    expect(checkToken(SUBJECT, TOKEN, check({ secrets: [] }))).toBe(false)
  })

  it('never accepts a token made with an empty secret', () => {
    const madeWithEmpty = makeToken(SUBJECT, '', AT)
    expect(checkToken(SUBJECT, madeWithEmpty, check({ secrets: [''] }))).toBe(false)
  })

  it('is spent by any change of what the hash covers', () => {
    expect(checkToken({ ...SUBJECT, lastLogin: new Date('2024-06-01T00:00:01Z') }, TOKEN, check())).toBe(false)
    expect(checkToken({ ...SUBJECT, passwordHash: '$argon2id$other' }, TOKEN, check())).toBe(false)
    expect(checkToken({ ...SUBJECT, email: 'bob@example.com' }, TOKEN, check())).toBe(false)
    expect(checkToken({ ...SUBJECT, hashId: '43' }, TOKEN, check())).toBe(false)
  })

  it.each([
    ['a tampered hash', 'c7x1c0-79eb61cae1f7b2cc3d617c532056154d'],
    ['a tampered timestamp', 'c7x1c1-79eb61cae1f7b2cc3d617c532056154c'],
    ['an upper-case token', TOKEN.toUpperCase()],
    ['a truncated hash', TOKEN.slice(0, -1)],
    ['no separator', TOKEN.replace('-', '')],
    ['an empty token', ''],
    ['extra text', `${TOKEN}-x`],
  ])('refuses %s', (_case, token) => {
    expect(checkToken(SUBJECT, token, check())).toBe(false)
  })
})

describe('uidb64', () => {
  const uuid = '10000000-0000-4000-8000-000000000007'

  it('is URL-safe base64 without padding of the decimal id or the UUID', () => {
    expect(encodeUid(42)).toBe('NDI')
    expect(encodeUid('1042')).toBe('MTA0Mg')
    expect(encodeUid(uuid)).toBe(Buffer.from(uuid).toString('base64url'))
    expect(encodeUid(uuid)).not.toMatch(/[=+/]/)
  })

  it('decodes old integer ids and UUIDs', () => {
    expect(decodeUid('NDI')).toEqual({ legacyId: 42 })
    expect(decodeUid('MTA0Mg')).toEqual({ legacyId: 1042 })
    expect(decodeUid(encodeUid(uuid))).toEqual({ userId: uuid })
    expect(decodeUid(encodeUid(uuid.toUpperCase()))).toEqual({ userId: uuid })
    expect(decodeUid(encodeUid(2_147_483_647))).toEqual({ legacyId: 2_147_483_647 })
  })

  it.each([
    ['an empty string', ''],
    ['padding', 'NDI='],
    ['standard base64 characters', 'a+b/'],
    ['a non-canonical encoding', 'NDJ'],
    ['text that is no id', encodeUid('admin')],
    ['a negative id', encodeUid('-1')],
    ['an id beyond the integer column', encodeUid(2_147_483_648)],
    ['a malformed UUID', encodeUid('10000000-0000-4000-8000-00000000000')],
    ['bytes that are not UTF-8', Buffer.from([0xff, 0xfe]).toString('base64url')],
  ])('refuses %s', (_case, uidb64) => {
    expect(decodeUid(uidb64)).toBeUndefined()
  })
})

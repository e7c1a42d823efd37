import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Django's PasswordResetTokenGenerator (SHA-256, Django ≥ 3.1), re-implemented from its
 * description so that confirmation links the old platform already e-mailed keep working, and the
 * links our command line makes are the same kind.
 */

const KEY_SALT = 'django.contrib.auth.tokens.PasswordResetTokenGenerator'
/** Django counts token time in whole seconds from 2001-01-01 (UTC here: the old platform ran in UTC). */
const EPOCH_MS = Date.UTC(2001, 0, 1)
/** A link made on a machine whose clock runs a little ahead is still accepted. */
export const FUTURE_SKEW_SECONDS = 300
/** Django refuses longer base36 timestamps (they would overflow its integers). */
const TOKEN = /^([0-9a-z]{1,13})-([0-9a-f]+)$/
const MAX_LEGACY_ID = 2_147_483_647
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** What the hash of a link covers: changing any of it (a password change, a login) spends the link. */
export interface LinkSubject {
  /** The primary key the old platform used: the legacy integer id (or the UUID when there is none). */
  hashId: string
  passwordHash: string
  lastLogin: Date | null
  email: string
}

export const toBase36 = (value: number): string => value.toString(36)

export function fromBase36(text: string): number | undefined {
  if (!/^[0-9a-z]{1,13}$/.test(text)) return undefined
  const value = parseInt(text, 36)
  return Number.isSafeInteger(value) ? value : undefined
}

export const tokenTimestamp = (at: Date): number => Math.floor((at.getTime() - EPOCH_MS) / 1000)

/** Python's `str(datetime)` of `last_login` without microseconds or zone: `YYYY-MM-DD HH:MM:SS`. */
export function formatLastLogin(lastLogin: Date | null): string {
  return lastLogin ? lastLogin.toISOString().slice(0, 19).replace('T', ' ') : ''
}

function hashValue(subject: LinkSubject, timestamp: number): string {
  return `${subject.hashId}${subject.passwordHash}${formatLastLogin(subject.lastLogin)}${timestamp}${subject.email}`
}

/** Django's salted_hmac: the HMAC key is SHA-256 of salt and secret; every second hex digit is kept. */
function tokenAt(subject: LinkSubject, timestamp: number, secret: string): string {
  const key = createHash('sha256')
    .update(KEY_SALT + secret)
    .digest()
  const digest = createHmac('sha256', key).update(hashValue(subject, timestamp)).digest('hex')
  const hash = [...digest].filter((_, index) => index % 2 === 0).join('')
  return `${toBase36(timestamp)}-${hash}`
}

export function makeToken(subject: LinkSubject, secret: string, at: Date = new Date()): string {
  return tokenAt(subject, tokenTimestamp(at), secret)
}

export interface TokenCheck {
  /** The current secret first, then the ones being rotated out; empty ones are ignored. */
  secrets: string[]
  ttlSeconds: number
  now?: Date
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * Django's check_token: the token is remade from the subject with each secret and compared in
 * constant time; it is valid for `ttlSeconds` from its timestamp (Django's PASSWORD_RESET_TIMEOUT).
 */
export function checkToken(subject: LinkSubject, token: string, check: TokenCheck): boolean {
  const match = TOKEN.exec(token)
  const timestamp = match?.[1] === undefined ? undefined : fromBase36(match[1])
  if (timestamp === undefined) return false
  const age = tokenTimestamp(check.now ?? new Date()) - timestamp
  if (age > check.ttlSeconds || age < -FUTURE_SKEW_SECONDS) return false
  let valid = false
  for (const secret of check.secrets) {
    if (secret && sameText(tokenAt(subject, timestamp, secret), token)) valid = true
  }
  return valid
}

/** Django's urlsafe_base64_encode: URL-safe base64 without padding. */
export const encodeUid = (uid: string | number): string => Buffer.from(String(uid), 'utf8').toString('base64url')

export type DecodedUid = { legacyId: number } | { userId: string }

/**
 * The user a `uidb64` names: the old integer id, or our UUID. Undefined for anything else, including
 * encodings our own encoder would not produce (Node's decoder silently skips stray characters).
 */
export function decodeUid(uidb64: string): DecodedUid | undefined {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(uidb64)) return undefined
  const text = Buffer.from(uidb64, 'base64url').toString('utf8')
  if (encodeUid(text) !== uidb64) return undefined
  if (/^[0-9]{1,10}$/.test(text)) {
    const legacyId = Number(text)
    return legacyId <= MAX_LEGACY_ID ? { legacyId } : undefined
  }
  return UUID.test(text) ? { userId: text.toLowerCase() } : undefined
}

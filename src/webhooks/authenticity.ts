import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest()

/**
 * Whether the path secret is one of the configured ones, in constant time: digests make the lengths
 * equal, and every configured secret is compared, so the time tells neither which nor how close.
 */
export function matchesAnySecret(candidate: string, secrets: readonly string[]): boolean {
  const given = sha256(candidate)
  let matched = false
  for (const secret of secrets) matched = timingSafeEqual(given, sha256(secret)) || matched
  return matched
}

const CONTENT_HMAC = /^sha256=([0-9a-fA-F]{64})$/

/** Whether `Content-Hmac: sha256=<hex>` is the HMAC-SHA256 of the raw body under the key, in constant time. */
export function hasValidContentHmac(rawBody: Buffer, header: string | undefined, key: string): boolean {
  const hex = header === undefined ? undefined : CONTENT_HMAC.exec(header.trim())?.[1]
  if (hex === undefined) return false
  const expected = createHmac('sha256', key).update(rawBody).digest()
  return timingSafeEqual(Buffer.from(hex, 'hex'), expected)
}

/** The dedupe key of a delivery: the hex SHA-256 of its raw body. */
export const dedupeKeyOf = (rawBody: Buffer): string => createHash('sha256').update(rawBody).digest('hex')

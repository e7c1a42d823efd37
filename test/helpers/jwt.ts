import { createHmac, sign as cryptoSign, type KeyObject } from 'node:crypto'
import { TEST_SECRETS } from './secrets.js'

const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url')

/** A token signed by hand, to forge what the service must refuse. */
export function forgeHs256(claims: object, secret: string = TEST_SECRETS.JWT_SIGNING_KEY, header: object = { alg: 'HS256', typ: 'JWT' }): string {
  const unsigned = `${part(header)}.${part(claims)}`
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`
}

export function forgeUnsigned(claims: object): string {
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`
}

export function forgeWithKey(claims: object, alg: 'RS256' | 'EdDSA', privateKey: KeyObject, header: object = { alg, typ: 'JWT' }): string {
  const unsigned = `${part(header)}.${part(claims)}`
  const signature = cryptoSign(alg === 'RS256' ? 'sha256' : null, Buffer.from(unsigned), privateKey)
  return `${unsigned}.${signature.toString('base64url')}`
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

/**
 * The token with its signature's last character spelled another way that decodes to the same bytes
 * (its lowest bit is padding when the signature's length is not a multiple of 4, as for HS256's 43).
 */
export function respellSignature(token: string): string {
  const signature = token.slice(token.lastIndexOf('.') + 1)
  if (signature.length % 4 === 0) throw new Error('this signature has no padding bits to respell')
  const last = BASE64URL.indexOf(signature.at(-1) ?? '')
  return `${token.slice(0, -1)}${BASE64URL[last ^ 1]}`
}

export function decodeClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
}

export function decodeHeader(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString()) as Record<string, unknown>
}

/** Claims like the service's own, valid for five minutes, for the given user and family. */
export function accessClaims(userId: string, familyId: string, overrides: object = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000)
  return { token_type: 'access', exp: now + 300, iat: now, jti: 'a'.repeat(32), user_id: userId, fid: familyId, ...overrides }
}

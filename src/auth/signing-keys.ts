import { createHash, createHmac, type JsonWebKey } from 'node:crypto'
import type { Config } from '../config.js'

/** A key that verifies the service's tokens, under the `kid` their header names it by. */
export interface VerificationKey {
  kid: string
  algorithm: 'HS256' | 'RS256' | 'EdDSA'
  /** The HS256 secret, or the public key in PEM. */
  key: string
}

/** RFC 7638 thumbprint: the key id the gateway matches against the token header's `kid`. */
export function jwkThumbprint(jwk: JsonWebKey): string {
  const members = jwk.kty === 'RSA' ? { e: jwk.e, kty: jwk.kty, n: jwk.n } : { crv: jwk.crv, kty: jwk.kty, x: jwk.x }
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url')
}

/**
 * An HS256 secret's key id: an HMAC made with the secret, so the id names the key without telling
 * anything of it (a plain hash of a weak secret could be searched for offline).
 */
export function secretKeyId(secret: string): string {
  return createHmac('sha256', secret).update('jwt key id').digest('base64url').slice(0, 16)
}

/** The `kid` of the key the service signs with now. */
export function signingKeyId(jwt: Config['jwt']): string {
  return jwt.algorithm === 'HS256' ? secretKeyId(jwt.secret) : jwkThumbprint(jwt.publicKeyObject.export({ format: 'jwk' }))
}

/** The keys that verify but no longer sign: JWT_SIGNING_KEY_FALLBACKS, then JWT_PUBLIC_KEY_FALLBACKS. */
export function previousKeys(jwt: Config['jwt']): VerificationKey[] {
  return [
    ...jwt.secretFallbacks.map((secret) => ({ kid: secretKeyId(secret), algorithm: 'HS256' as const, key: secret })),
    ...jwt.publicKeyFallbacks.map(({ algorithm, publicKey, publicKeyObject }) => ({
      kid: jwkThumbprint(publicKeyObject.export({ format: 'jwk' })),
      algorithm,
      key: publicKey,
    })),
  ]
}

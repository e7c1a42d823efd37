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
function previousKeys(jwt: Config['jwt']): VerificationKey[] {
  return [
    ...jwt.secretFallbacks.map((secret) => ({ kid: secretKeyId(secret), algorithm: 'HS256' as const, key: secret })),
    ...jwt.publicKeyFallbacks.map(({ algorithm, publicKey, publicKeyObject }) => ({
      kid: jwkThumbprint(publicKeyObject.export({ format: 'jwk' })),
      algorithm,
      key: publicKey,
    })),
  ]
}

/**
 * The keys that verify the service's tokens, chosen by the header's `kid`: the signing key's, and
 * the previous ones. A token without `kid` was issued before tokens had one (this release's
 * predecessor signed without); it is tried with each key (which of them signed it is unknown),
 * but only until `kidlessUntilMs`: the longest a token lives, after the cut-over.
 */
export interface KeyRing {
  current: string
  previous: ReadonlyMap<string, VerificationKey>
  /** Milliseconds since the epoch; from then on a token without `kid` is refused without trying a key. */
  kidlessUntilMs: number
}

type RingConfig = Pick<Config, 'jwt' | 'accessTokenTtl' | 'refreshTokenTtl'>

/** A token without `kid` is tried until the longest a token lives (the refresh token's or the access token's) after the cut-over. */
export const kidlessUntilMs = (config: RingConfig, cutoverMs: number): number =>
  cutoverMs + Math.max(config.accessTokenTtl, config.refreshTokenTtl) * 1000

/**
 * The ring of a configuration. The cut-over is JWT_KID_CUTOVER, else the deployment's (stored in
 * the database, src/tokens/authentication.ts sets it at ready); until read, this process's start
 * (none of its own tokens lacks a `kid`, and the stored one is never later).
 */
export function keyRing(config: RingConfig, startedAtMs = Date.now()): KeyRing {
  return {
    current: signingKeyId(config.jwt),
    previous: new Map(previousKeys(config.jwt).map((key) => [key.kid, key])),
    kidlessUntilMs: kidlessUntilMs(config, config.jwt.kidCutoverMs ?? startedAtMs),
  }
}

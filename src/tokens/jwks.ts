import type { KeyObject } from 'node:crypto'
import type { Config } from '../config.js'
import { jwkThumbprint } from './signing-keys.js'

const publicJwk = (key: KeyObject, algorithm: 'RS256' | 'EdDSA') => {
  const jwk = key.export({ format: 'jwk' })
  return { ...jwk, kty: String(jwk.kty), kid: jwkThumbprint(jwk), alg: algorithm, use: 'sig' }
}

/** The signing key's public half, then the previous ones (JWT_PUBLIC_KEY_FALLBACKS), whose tokens still verify. */
export function publicJwks(config: Config['jwt']) {
  const current = config.algorithm === 'HS256' ? [] : [publicJwk(config.publicKeyObject, config.algorithm)]
  const previous = config.publicKeyFallbacks.map(({ publicKeyObject, algorithm }) => publicJwk(publicKeyObject, algorithm))
  const keys = [...current, ...previous]
  return { keys: keys.filter((key, index) => keys.findIndex((other) => other.kid === key.kid) === index) }
}

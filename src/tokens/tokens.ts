import { randomUUID } from 'node:crypto'
import type { JWT } from '@fastify/jwt'
import type { Config } from '../config.js'
import { problem } from '../lib/problem.js'
import type { KeyRing, VerificationKey } from './signing-keys.js'

export type TokenType = 'access' | 'refresh'

/**
 * SimpleJWT's claims, so partners and the gateway see the tokens they know, plus `fid`: the
 * refresh-token family, which lets a revoked family cut off its access tokens too.
 */
export interface TokenClaims {
  token_type: TokenType
  exp: number
  iat: number
  jti: string
  user_id: string
  fid: string
  iss?: string
  aud?: string
}

/**
 * A refresh token's issue time and its own expiry (the statement that makes it its family's current
 * token returns the earlier of this and the family's end), taken from one reading of the clock so
 * that `exp - iat` is the refresh lifetime exactly.
 */
export interface RefreshTerm {
  issuedAt: number
  expiresAt: Date
}

export interface SignedToken {
  token: string
  jti: string
  expiresAt: Date
}

/**
 * SimpleJWT's jti: a UUID4 as 32 hex characters (`uuid4().hex`). randomUUID draws from a cached
 * batch of entropy; randomBytes(16) asked the system for it on every token.
 */
export function newJti(): string {
  return randomUUID().replaceAll('-', '')
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/**
 * The `kid` of a token's header: null when it has none, undefined when the header is unreadable or
 * its `kid` not a string (no key could verify it).
 */
function headerKeyId(token: string): string | null | undefined {
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString())
    if (typeof header !== 'object' || header === null || Array.isArray(header)) return undefined
    const kid = (header as { kid?: unknown }).kid
    if (kid === undefined) return null
    return typeof kid === 'string' ? kid : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether the signature is spelled the one way base64url spells its bytes. fast-jwt decodes it
 * leniently, so a token whose last character differs in the unused low bits verifies as the token
 * it came from: a second spelling we never issued, which would slip past anything keyed by the
 * token's text (our verification cache, a gateway's block list).
 */
export function hasCanonicalSignature(token: string): boolean {
  const signature = token.slice(token.lastIndexOf('.') + 1)
  return Buffer.from(signature, 'base64url').toString('base64url') === signature
}

/**
 * Access tokens verified recently, by their text, each until its `exp`. A client sends the same
 * access token with every request for its lifetime, so a hit skips the decode, the HMAC and the
 * claim checks. Keyed by the token itself, not by a hash of it as fast-jwt's own cache is: the
 * request already holds the token, and hashing it on every request cost more than the verification
 * it saved. Only successes are kept. The oldest entry goes first when full.
 */
export class VerifiedTokenCache {
  private readonly entries = new Map<string, TokenClaims>()

  constructor(private readonly capacity: number) {}

  get(token: string, nowMs: number): TokenClaims | undefined {
    const claims = this.entries.get(token)
    if (claims === undefined || claims.exp * 1000 >= nowMs) return claims
    this.entries.delete(token)
    return undefined
  }

  set(token: string, claims: TokenClaims): void {
    if (this.capacity <= 0) return
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!)
    this.entries.set(token, claims)
  }
}

/**
 * Signs and checks the service's tokens; the JWT plugin holds the keys and pinned algorithm. Access
 * tokens, which come back with every request, go through the cache; a refresh token is verified
 * once in its life (it is spent then), so remembering it would only push access tokens out.
 */
export class TokenSigner {
  /** Signature verifications attempted so far: what bad tokens cost (the tests read it). */
  private checks = 0

  constructor(
    private readonly jwt: JWT,
    private readonly config: Pick<Config, 'accessTokenTtl' | 'refreshTokenTtl' | 'jwt'>,
    private readonly accessTokens = new VerifiedTokenCache(0),
    private readonly keys: KeyRing,
  ) {}

  get signatureChecks(): number {
    return this.checks
  }

  /** An access token of the family, expiring after its lifetime or at the family's end, whichever comes first. */
  signAccess(userId: string, familyId: string, familyEndsAt: Date): SignedToken {
    const issuedAt = nowSeconds()
    const expiresAt = Math.min(issuedAt + this.config.accessTokenTtl, Math.floor(familyEndsAt.getTime() / 1000))
    return this.sign('access', userId, familyId, issuedAt, expiresAt)
  }

  /** The term of a refresh token issued now, for a statement that stores it before it is signed. */
  refreshTerm(): RefreshTerm {
    const issuedAt = nowSeconds()
    return { issuedAt, expiresAt: new Date((issuedAt + this.config.refreshTokenTtl) * 1000) }
  }

  /** A refresh token already stored as its family's current one under `jti`, expiring when that statement said. */
  signRefreshStored(jti: string, userId: string, familyId: string, term: RefreshTerm): SignedToken {
    return this.sign('refresh', userId, familyId, term.issuedAt, Math.floor(term.expiresAt.getTime() / 1000), jti)
  }

  /** The claims of a token of the expected type, or undefined when it is not valid for that use. */
  verify(token: string, expected: TokenType): TokenClaims | undefined {
    if (expected === 'access') {
      const remembered = this.accessTokens.get(token, Date.now())
      if (remembered) return remembered
    }
    const claims = this.verifyUncached(token, expected)
    if (claims && expected === 'access') this.accessTokens.set(token, claims)
    return claims
  }

  private verifyUncached(token: string, expected: TokenType): TokenClaims | undefined {
    if (!hasCanonicalSignature(token)) return undefined
    const claims = this.verifySignature(token)
    if (!claims) return undefined
    const wellFormed =
      claims.token_type === expected &&
      typeof claims.user_id === 'string' &&
      typeof claims.fid === 'string' &&
      typeof claims.jti === 'string' &&
      /^[0-9a-f]{32}$/.test(claims.jti) &&
      UUID.test(claims.user_id) &&
      UUID.test(claims.fid)
    return wellFormed ? (claims as TokenClaims) : undefined
  }

  /**
   * The claims when a key of the ring signed the token: the one its `kid` names, pinned to that key's
   * algorithm; an unknown `kid` tries none. A token without `kid` (issued before tokens had one) is
   * tried with each key, until the ring's cut-over has passed: then none.
   */
  private verifySignature(token: string): Partial<TokenClaims> | undefined {
    const { current, previous, kidlessUntilMs } = this.keys
    const kid = headerKeyId(token)
    if (kid === current) return this.verifyWith(token)
    if (kid === null) return Date.now() < kidlessUntilMs ? this.verifyWithEach(token) : undefined
    const key = kid === undefined ? undefined : previous.get(kid)
    return key && this.verifyWith(token, key)
  }

  private verifyWithEach(token: string): Partial<TokenClaims> | undefined {
    for (const key of [undefined, ...this.keys.previous.values()]) {
      const claims = this.verifyWith(token, key)
      if (claims) return claims
    }
    return undefined
  }

  /** The claims when `key` (the signing key when none) signed the token, checked by fast-jwt. */
  private verifyWith(token: string, key?: VerificationKey): Partial<TokenClaims> | undefined {
    this.checks += 1
    try {
      return key
        ? this.jwt.verify<Partial<TokenClaims>>(token, { key: key.key, algorithms: [key.algorithm] })
        : this.jwt.verify<Partial<TokenClaims>>(token)
    } catch {
      return undefined
    }
  }

  private sign(type: TokenType, userId: string, familyId: string, iat: number, exp: number, jti = newJti()): SignedToken {
    const { issuer, audience } = this.config.jwt
    const claims: TokenClaims = {
      token_type: type,
      exp,
      iat,
      jti,
      user_id: userId,
      fid: familyId,
      ...(issuer ? { iss: issuer } : {}),
      ...(audience ? { aud: audience } : {}),
    }
    return { token: this.jwt.sign(claims), jti, expiresAt: new Date(exp * 1000) }
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The 401 of a token that fails, or whose user or family is no longer active (§2). */
export const tokenNotValid = () => problem(401, 'token_not_valid', 'Token is invalid or expired')

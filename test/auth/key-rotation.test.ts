import { generateKeyPairSync } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { secretKeyId } from '../../src/tokens/signing-keys.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, testConfig, useTestApp, type Tokens } from '../helpers/app.js'
import { accessClaims, decodeClaims, decodeHeader, forgeHs256, forgeWithKey } from '../helpers/jwt.js'

/**
 * Signing-key rotation without a logout (docs/operations.md): a restart with a new key and the old
 * one among the fallbacks keeps every token of the old key valid, signs new ones with the new key,
 * and tells them apart by the header's `kid`.
 */
useTestApp() // resets the demo data before every test
const OLD_KEY = 'old-signing-key-of-sufficient-length-0001'
const NEW_KEY = 'new-signing-key-of-sufficient-length-0002'
const ROUTE = '/api/company/v1/get-user-companies'

const read = (app: FastifyInstance, access: string) => app.inject({ method: 'GET', url: ROUTE, headers: bearer(access) })
const refreshOn = (app: FastifyInstance, token: string) =>
  app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })

/** Runs `test` with apps built on the shared database from each environment, closing them after. */
async function withApps(envs: Record<string, string>[], test: (...apps: FastifyInstance[]) => Promise<void>): Promise<void> {
  const apps: FastifyInstance[] = []
  try {
    for (const env of envs) apps.push(await buildTestApp(env))
    await test(...apps)
  } finally {
    await Promise.all(apps.map((app) => app.close()))
  }
}

const pem = (pair: ReturnType<typeof generateKeyPairSync>) => ({
  JWT_PRIVATE_KEY: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  JWT_PUBLIC_KEY: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
})

describe('HS256 key rotation (JWT_SIGNING_KEY_FALLBACKS)', () => {
  it('keeps tokens of the previous key valid after a restart with a new key, and signs new ones with the new key', async () => {
    await withApps([{ JWT_SIGNING_KEY: OLD_KEY }, { JWT_SIGNING_KEY: NEW_KEY, JWT_SIGNING_KEY_FALLBACKS: OLD_KEY }], async (before, after) => {
      const old = await obtainTokens(before!, 'alice@acme.example', DEMO_PASSWORD)
      const oldKid = decodeHeader(old.access).kid
      expect(oldKid).toMatch(/^[A-Za-z0-9_-]{16}$/)
      expect(decodeHeader(old.refresh).kid).toBe(oldKid)
      expect(JSON.stringify(decodeHeader(old.access))).not.toContain(OLD_KEY)

      expect((await read(after!, old.access)).statusCode).toBe(200)
      const rotated = await refreshOn(after!, old.refresh)
      expect(rotated.statusCode).toBe(200)
      const fresh = rotated.json<Tokens>()
      const newKid = decodeHeader(fresh.access).kid
      expect(newKid).toMatch(/^[A-Za-z0-9_-]{16}$/)
      expect(newKid).not.toBe(oldKid)
      expect(decodeHeader(fresh.refresh).kid).toBe(newKid)
      expect((await read(after!, fresh.access)).statusCode).toBe(200)
      expect((await refreshOn(after!, fresh.refresh)).statusCode).toBe(200)
      // The instance still on the old key cannot verify what the new key signed.
      problemOf(await read(before!, fresh.access), 401, 'token_not_valid')
    })
  })

  it('refuses tokens of the previous key without the fallback', async () => {
    await withApps([{ JWT_SIGNING_KEY: OLD_KEY }, { JWT_SIGNING_KEY: NEW_KEY }], async (before, after) => {
      const old = await obtainTokens(before!, 'alice@acme.example', DEMO_PASSWORD)
      problemOf(await read(after!, old.access), 401, 'token_not_valid')
      problemOf(await refreshOn(after!, old.refresh), 401, 'token_not_valid')
    })
  })

  it('verifies a token issued before tokens had a kid with the key or a fallback, and refuses a kid it does not know', async () => {
    await withApps([{ JWT_SIGNING_KEY: OLD_KEY }, { JWT_SIGNING_KEY: NEW_KEY, JWT_SIGNING_KEY_FALLBACKS: OLD_KEY }], async (before, after) => {
      const { access } = await obtainTokens(before!, 'alice@acme.example', DEMO_PASSWORD)
      const claims = accessClaims(DEMO.users.alice, String(decodeClaims(access).fid))
      expect((await read(after!, forgeHs256(claims, OLD_KEY))).statusCode).toBe(200)
      expect((await read(after!, forgeHs256(claims, NEW_KEY))).statusCode).toBe(200)
      expect((await read(before!, forgeHs256(claims, OLD_KEY))).statusCode).toBe(200)
      const unknownKid = forgeHs256(claims, OLD_KEY, { alg: 'HS256', typ: 'JWT', kid: 'not-a-key-we-know' })
      problemOf(await read(after!, unknownKid), 401, 'token_not_valid')
      const wrongKid = forgeHs256(claims, 'a-third-key-of-sufficient-length-0003', { alg: 'HS256', typ: 'JWT', kid: decodeHeader(access).kid })
      problemOf(await read(after!, wrongKid), 401, 'token_not_valid')
    })
  })
})

describe.each(['ed25519', 'rsa'] as const)('%s key rotation (JWT_PUBLIC_KEY_FALLBACKS)', (type) => {
  const pairs = () =>
    type === 'rsa'
      ? [generateKeyPairSync('rsa', { modulusLength: 2048 }), generateKeyPairSync('rsa', { modulusLength: 2048 })]
      : [generateKeyPairSync('ed25519'), generateKeyPairSync('ed25519')]

  it('publishes the previous public key beside the new one, and its tokens still verify and refresh', async () => {
    const [oldPair, newPair] = pairs()
    const oldKeys = pem(oldPair!)
    const rotatedEnv = { ...pem(newPair!), JWT_PUBLIC_KEY_FALLBACKS: oldKeys.JWT_PUBLIC_KEY }
    await withApps([oldKeys, rotatedEnv, pem(newPair!)], async (before, after, withoutFallback) => {
      const old = await obtainTokens(before!, 'alice@acme.example', DEMO_PASSWORD)
      const oldKid = decodeHeader(old.access).kid
      const jwks = (await after!.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<{ keys: { kid: string; alg: string }[] }>()
      expect(jwks.keys).toHaveLength(2)
      expect(jwks.keys[1]).toMatchObject({ kid: oldKid, alg: type === 'rsa' ? 'RS256' : 'EdDSA' })
      expect(jwks.keys[1]).not.toHaveProperty('d')

      expect((await read(after!, old.access)).statusCode).toBe(200)
      const fresh = (await refreshOn(after!, old.refresh)).json<Tokens>()
      expect(decodeHeader(fresh.access).kid).toBe(jwks.keys[0]!.kid)
      expect(decodeHeader(fresh.refresh).kid).toBe(jwks.keys[0]!.kid)
      expect((await read(after!, fresh.access)).statusCode).toBe(200)

      problemOf(await read(withoutFallback!, old.access), 401, 'token_not_valid')
      const single = (await withoutFallback!.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<{ keys: unknown[] }>()
      expect(single.keys).toHaveLength(1)
    })
  })
})

describe('from a shared secret to a key pair', () => {
  it('keeps the HS256 tokens valid with the old secret among JWT_SIGNING_KEY_FALLBACKS, each key pinned to its own algorithm', async () => {
    const pair = generateKeyPairSync('ed25519')
    await withApps([{ JWT_SIGNING_KEY: OLD_KEY }, { ...pem(pair), JWT_SIGNING_KEY_FALLBACKS: OLD_KEY }], async (before, after) => {
      const old = await obtainTokens(before!, 'alice@acme.example', DEMO_PASSWORD)
      expect((await read(after!, old.access)).statusCode).toBe(200)
      const fresh = (await refreshOn(after!, old.refresh)).json<Tokens>()
      expect(decodeHeader(fresh.access).alg).toBe('EdDSA')
      expect((await read(after!, fresh.access)).statusCode).toBe(200)
      // The public key is never an HMAC secret, whatever kid the header names.
      const publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString()
      const confused = forgeHs256(decodeClaims(fresh.access), publicPem, { alg: 'HS256', typ: 'JWT', kid: decodeHeader(fresh.access).kid })
      problemOf(await read(after!, confused), 401, 'token_not_valid')
    })
  })
})

describe('the key is chosen by kid: a bad token costs one verification or none, however many fallbacks', () => {
  const FALLBACKS = Array.from({ length: 20 }, (_, index) => `fallback-signing-key-of-sufficient-length-${String(index).padStart(4, '0')}`)
  const THIRD_KEY = 'a-third-key-of-sufficient-length-0003'
  const hs256 = (kid?: string) => ({ alg: 'HS256', typ: 'JWT', ...(kid === undefined ? {} : { kid }) })
  const DAY_MS = 86_400_000

  /** The answer's status and how many signature verifications the token cost. */
  async function attempt(app: FastifyInstance, token: string): Promise<{ status: number; checks: number }> {
    const before = app.tokens.signatureChecks
    const response = await read(app, token)
    return { status: response.statusCode, checks: app.tokens.signatureChecks - before }
  }

  it('a kid of the ring costs its key alone; an unknown kid none; a token without kid, before the cut-over, every key', async () => {
    await withApps([{ JWT_SIGNING_KEY: NEW_KEY, JWT_SIGNING_KEY_FALLBACKS: FALLBACKS.join(',') }], async (app) => {
      const { access } = await obtainTokens(app!, 'alice@acme.example', DEMO_PASSWORD)
      const claims = accessClaims(DEMO.users.alice, String(decodeClaims(access).fid))
      expect(await attempt(app!, forgeHs256(claims, THIRD_KEY, hs256(secretKeyId(FALLBACKS[7]!))))).toEqual({ status: 401, checks: 1 })
      expect(await attempt(app!, forgeHs256(claims, THIRD_KEY, hs256(secretKeyId(NEW_KEY))))).toEqual({ status: 401, checks: 1 })
      expect(await attempt(app!, forgeHs256(claims, THIRD_KEY, hs256('not-a-key-we-know')))).toEqual({ status: 401, checks: 0 })
      expect(await attempt(app!, forgeHs256(claims, THIRD_KEY, hs256()))).toEqual({ status: 401, checks: 21 })
      expect(await attempt(app!, forgeHs256(claims, FALLBACKS[7]!, hs256(secretKeyId(FALLBACKS[7]!))))).toEqual({ status: 200, checks: 1 })
      expect((await attempt(app!, forgeHs256({ ...claims, jti: 'b'.repeat(32) }, FALLBACKS[19]!, hs256()))).status).toBe(200)
    })
  })

  it('once the longest token lifetime has passed since JWT_KID_CUTOVER, a token without kid is 401 without trying a key', async () => {
    const ring = { JWT_SIGNING_KEY: NEW_KEY, JWT_SIGNING_KEY_FALLBACKS: FALLBACKS.join(',') }
    const cutover = (msAgo: number) => new Date(Date.now() - msAgo).toISOString()
    const envs = [
      { ...ring, JWT_KID_CUTOVER: cutover(DAY_MS + 60_000) }, // a day (REFRESH_TOKEN_TTL) and a minute ago: past
      { ...ring, JWT_KID_CUTOVER: cutover(DAY_MS - 60_000) }, // not yet
      { ...ring, JWT_KID_CUTOVER: cutover(3_600_000), REFRESH_TOKEN_TTL: '30m', ACCESS_TOKEN_TTL: '45m' }, // the access lifetime is the longer
    ]
    await withApps(envs, async (past, within, pastAccess) => {
      const { access } = await obtainTokens(past!, 'alice@acme.example', DEMO_PASSWORD)
      const claims = accessClaims(DEMO.users.alice, String(decodeClaims(access).fid))
      const kidless = forgeHs256(claims, NEW_KEY, hs256())
      expect(await attempt(past!, kidless)).toEqual({ status: 401, checks: 0 })
      problemOf(await read(past!, kidless), 401, 'token_not_valid')
      expect(await attempt(pastAccess!, kidless)).toEqual({ status: 401, checks: 0 })
      expect((await attempt(within!, kidless)).status).toBe(200)
      // Tokens with a kid are unaffected.
      expect((await attempt(past!, access)).status).toBe(200)
      expect((await refreshOn(past!, (await obtainTokens(past!, 'bob@beta.example', DEMO_PASSWORD)).refresh)).statusCode).toBe(200)
    })
  })

  it("without JWT_KID_CUTOVER the cut-over is the deployment's, stored once in the database: every instance and restart holds it (issue 42, item 8)", async () => {
    const ring = { JWT_SIGNING_KEY: NEW_KEY, JWT_SIGNING_KEY_FALLBACKS: FALLBACKS.join(',') }
    let kidless = ''
    let storedMs = 0
    await withApps([ring], async (first) => {
      const { access } = await obtainTokens(first!, 'alice@acme.example', DEMO_PASSWORD)
      kidless = forgeHs256(accessClaims(DEMO.users.alice, String(decodeClaims(access).fid)), NEW_KEY, hs256())
      expect((await attempt(first!, kidless)).status).toBe(200)
      // Recorded by the first start; a deployment whose tokens have carried a kid for two days, say.
      const { rows } = await sql<{ at: Date }>`UPDATE kid_cutover SET cut_over_at = now() - interval '2 days' RETURNING cut_over_at AS at`.execute(
        first!.db,
      )
      storedMs = new Date(rows[0]!.at).getTime()
    })
    // A restart and a second instance, started now, hold the stored cut-over, not their own start.
    await withApps([ring, ring], async (restarted, other) => {
      for (const app of [restarted!, other!]) expect(await attempt(app, kidless)).toEqual({ status: 401, checks: 0 })
      const { rows } = await sql<{ at: Date; count: number }>`SELECT max(cut_over_at) AS at, count(*)::int AS count FROM kid_cutover`.execute(
        restarted!.db,
      )
      expect(rows[0]).toMatchObject({ count: 1 })
      expect(new Date(rows[0]!.at).getTime()).toBe(storedMs)
    })
  })

  it('a cut-over in the future, or not a date, stops the start naming JWT_KID_CUTOVER', () => {
    expect(() => testConfig({ JWT_KID_CUTOVER: new Date(Date.now() + DAY_MS).toISOString() })).toThrow(/JWT_KID_CUTOVER/)
    expect(() => testConfig({ JWT_KID_CUTOVER: 'yesterday' })).toThrow(/JWT_KID_CUTOVER/)
    expect(() => testConfig({ JWT_KID_CUTOVER: '2026-13-45' })).toThrow(/JWT_KID_CUTOVER/)
    expect(testConfig({ JWT_KID_CUTOVER: '2026-01-15' }).jwt.kidCutoverMs).toBe(Date.parse('2026-01-15T00:00:00Z'))
  })
})

describe('an unknown kid is 401 with no fallback configured', () => {
  it('HS256', async () => {
    await withApps([{ JWT_SIGNING_KEY: NEW_KEY }], async (app) => {
      const { access } = await obtainTokens(app!, 'alice@acme.example', DEMO_PASSWORD)
      const claims = accessClaims(DEMO.users.alice, String(decodeClaims(access).fid))
      problemOf(await read(app!, forgeHs256(claims, NEW_KEY, { alg: 'HS256', typ: 'JWT', kid: 'not-a-key-we-know' })), 401, 'token_not_valid')
      expect((await read(app!, forgeHs256(claims, NEW_KEY, { alg: 'HS256', typ: 'JWT', kid: secretKeyId(NEW_KEY) }))).statusCode).toBe(200)
    })
  })

  it.each(['ed25519', 'rsa'] as const)('a %s key pair', async (type) => {
    const pair = type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519')
    const alg = type === 'rsa' ? 'RS256' : 'EdDSA'
    await withApps([pem(pair)], async (app) => {
      const { access } = await obtainTokens(app!, 'alice@acme.example', DEMO_PASSWORD)
      const claims = accessClaims(DEMO.users.alice, String(decodeClaims(access).fid))
      const kid = decodeHeader(access).kid
      problemOf(await read(app!, forgeWithKey(claims, alg, pair.privateKey, { alg, typ: 'JWT', kid: 'not-a-key-we-know' })), 401, 'token_not_valid')
      expect((await read(app!, forgeWithKey(claims, alg, pair.privateKey, { alg, typ: 'JWT', kid }))).statusCode).toBe(200)
    })
  })
})

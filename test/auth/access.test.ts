import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { testDatabase } from '../helpers/database.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, problemOf, useTestApp } from '../helpers/app.js'
import { accessClaims, decodeClaims, decodeHeader, forgeHs256, forgeUnsigned, forgeWithKey, respellSignature } from '../helpers/jwt.js'

const ctx = useTestApp()
const ROUTE = '/api/company/v1/get-user-companies'
const get = (headers: Record<string, string> = {}, app = ctx.app) => app.inject({ method: 'GET', url: ROUTE, headers })

async function aliceFamily(): Promise<{ access: string; fid: string }> {
  const tokens = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
  return { access: tokens.access, fid: String(decodeClaims(tokens.access).fid) }
}

describe('the JWT check on authenticated routes', () => {
  it('answers 401 not_authenticated without an Authorization header, or with another scheme', async () => {
    const body = problemOf(await get(), 401, 'not_authenticated')
    expect(body.detail).toBe('Authentication credentials were not provided.')
    problemOf(await get({ authorization: 'Basic YWxpY2U6eA==' }), 401, 'not_authenticated')
  })

  it('accepts a forged-by-us token with the right key and claims (the control for the cases below)', async () => {
    const { fid } = await aliceFamily()
    expect((await get(bearer(forgeHs256(accessClaims(DEMO.users.alice, fid))))).statusCode).toBe(200)
  })

  it('answers 401 token_not_valid for every token that fails', async () => {
    const { fid, access } = await aliceFamily()
    const now = Math.floor(Date.now() / 1000)
    const claims = accessClaims(DEMO.users.alice, fid)
    const { privateKey } = generateKeyPairSync('ed25519')
    const [header, payload, signature] = access.split('.')
    const tampered = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString())
    tampered.user_id = DEMO.users.bob
    const cases: Record<string, string> = {
      'alg none': forgeUnsigned(claims),
      'another algorithm (HS512)': forgeHs256(claims, undefined, { alg: 'HS512', typ: 'JWT' }),
      'another key': forgeHs256(claims, 'some-other-signing-key-of-enough-length-00'),
      'an asymmetric key the service does not hold': forgeWithKey(claims, 'EdDSA', privateKey),
      'an expired token': forgeHs256({ ...claims, exp: now - 1 }),
      'no exp': forgeHs256({ ...claims, exp: undefined }),
      'a refresh token': forgeHs256({ ...claims, token_type: 'refresh' }),
      'a not-yet-valid token': forgeHs256({ ...claims, nbf: now + 600 }),
      'a tampered payload': `${header}.${Buffer.from(JSON.stringify(tampered)).toString('base64url')}.${signature}`,
      'a bad jti': forgeHs256({ ...claims, jti: 'x' }),
      garbage: 'abc.def.ghi',
    }
    for (const [name, token] of Object.entries(cases)) {
      const response = await get(bearer(token))
      expect({ name, status: response.statusCode }).toEqual({ name, status: 401 })
      problemOf(response, 401, 'token_not_valid')
    }
    problemOf(await get({ authorization: 'Bearer' }), 401, 'token_not_valid')
    problemOf(await get({ authorization: 'Bearer a b' }), 401, 'token_not_valid')
  })

  it('refuses a valid token whose signature is spelled another way for the same bytes', async () => {
    const { access } = await aliceFamily()
    expect((await get(bearer(access))).statusCode).toBe(200)
    const respelled = respellSignature(access)
    expect(Buffer.from(respelled.split('.')[2] ?? '', 'base64url')).toEqual(Buffer.from(access.split('.')[2] ?? '', 'base64url'))
    problemOf(await get(bearer(respelled)), 401, 'token_not_valid')
  })

  it('cuts off a disabled user at once, and a revoked family', async () => {
    const { db } = await testDatabase()
    const { access } = await aliceFamily()
    expect((await get(bearer(access))).statusCode).toBe(200)
    await db.updateTable('users').set({ is_active: false }).where('id', '=', DEMO.users.alice).execute()
    problemOf(await get(bearer(access)), 401, 'token_not_valid')

    // A revoked family: its access token stops at once, though the user is active and it has not expired.
    await db.updateTable('users').set({ is_active: true }).where('id', '=', DEMO.users.alice).execute()
    const family = await aliceFamily()
    expect((await get(bearer(family.access))).statusCode).toBe(200)
    await db.updateTable('token_families').set({ revoked_at: new Date() }).where('id', '=', family.fid).execute()
    problemOf(await get(bearer(family.access)), 401, 'token_not_valid')
  })

  it('refuses a token once it expires, though it passed a moment before (verified tokens are remembered until exp only)', async () => {
    const { fid } = await aliceFamily()
    const exp = Math.floor(Date.now() / 1000) + 1
    const token = forgeHs256(accessClaims(DEMO.users.alice, fid, { exp }))
    expect((await get(bearer(token))).statusCode).toBe(200)
    expect((await get(bearer(token))).statusCode).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, exp * 1000 + 50 - Date.now()))
    problemOf(await get(bearer(token)), 401, 'token_not_valid')
  })

  it('answers each of many concurrent callers as the user of their own token (the verified-token cache keeps them apart)', async () => {
    const emails = ['alice@acme.example', 'bob@beta.example', 'carol@gamma.example', 'dave@delta.example']
    const tokens = await Promise.all(emails.map(async (email) => (await obtainTokens(ctx.app, email, DEMO_PASSWORD)).access))
    const expected = await Promise.all(tokens.map(async (token) => (await get(bearer(token))).json()))
    expect(new Set(expected.map((companies) => JSON.stringify(companies))).size).toBe(emails.length)
    const calls = Array.from({ length: 32 }, (_, index) => index % emails.length)
    const answers = await Promise.all(calls.map((user) => get(bearer(tokens[user]!))))
    expect(answers.map((answer) => ({ status: answer.statusCode, body: answer.json() }))).toEqual(
      calls.map((user) => ({ status: 200, body: expected[user] })),
    )
  })

  it('refuses a token for a user that no longer exists', async () => {
    const { fid } = await aliceFamily()
    problemOf(await get(bearer(forgeHs256(accessClaims('10000000-0000-4000-8000-0000000000ff', fid)))), 401, 'token_not_valid')
  })

  it('checks iss and aud when they are configured', async () => {
    const app = await buildTestApp({ JWT_ISSUER: 'https://auth.example', JWT_AUDIENCE: 'partners' })
    try {
      const tokens = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      const claims = decodeClaims(tokens.access)
      expect(claims).toMatchObject({ iss: 'https://auth.example', aud: 'partners' })
      expect((await get(bearer(tokens.access), app)).statusCode).toBe(200)
      problemOf(await get(bearer(forgeHs256({ ...claims, iss: 'https://evil.example' })), app), 401, 'token_not_valid')
      problemOf(await get(bearer(forgeHs256({ ...claims, aud: 'someone-else' })), app), 401, 'token_not_valid')
      problemOf(await get(bearer(forgeHs256({ ...claims, iss: undefined })), app), 401, 'token_not_valid')
      problemOf(await get(bearer(forgeHs256({ ...claims, aud: undefined })), app), 401, 'token_not_valid')
    } finally {
      await app.close()
    }
  })

  it.each(['ed25519', 'rsa'] as const)('signs with a %s key pair, publishes it as JWKS and refuses HS256', async (type) => {
    const pair = type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519')
    const app = await buildTestApp({
      JWT_PRIVATE_KEY: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      JWT_PUBLIC_KEY: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    })
    try {
      const alg = type === 'rsa' ? 'RS256' : 'EdDSA'
      const tokens = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
      const header = decodeHeader(tokens.access)
      expect(header.alg).toBe(alg)
      expect((await get(bearer(tokens.access), app)).statusCode).toBe(200)
      const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
      expect(jwks.keys).toHaveLength(1)
      expect(jwks.keys[0]).toMatchObject({ kid: header.kid, alg, use: 'sig', kty: type === 'rsa' ? 'RSA' : 'OKP' })
      expect(jwks.keys[0]).not.toHaveProperty('d')
      // HS/RS confusion: the public key used as an HMAC secret must not pass.
      const publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString()
      const confused = forgeHs256(decodeClaims(tokens.access), publicPem)
      problemOf(await get(bearer(confused), app), 401, 'token_not_valid')
      const resigned = forgeWithKey(decodeClaims(tokens.access), alg, pair.privateKey)
      expect((await get(bearer(resigned), app)).statusCode).toBe(200)
    } finally {
      await app.close()
    }
  })

  it('publishes an empty JWKS when tokens are signed with a shared secret', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ keys: [] })
  })
})

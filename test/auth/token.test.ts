import { describe, expect, it } from 'vitest'
import { testDatabase } from '../helpers/database.js'
import { DEMO, DEMO_PASSWORD, LEGACY_DEMO_PASSWORD, problemOf, useTestApp } from '../helpers/app.js'
import { decodeClaims, decodeHeader } from '../helpers/jwt.js'

const ctx = useTestApp()
const postToken = (payload: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: payload as object, headers })

async function storedUser(id: string) {
  const { db } = await testDatabase()
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
}

describe('POST /api/auth/v1/token', () => {
  it('answers 200 with a refresh and an access token carrying SimpleJWT claims', async () => {
    const response = await postToken({ email: 'alice@acme.example', password: DEMO_PASSWORD })
    expect(response.statusCode).toBe(200)
    const body = response.json()
    expect(Object.keys(body)).toEqual(['refresh', 'access'])
    const access = decodeClaims(body.access)
    const refresh = decodeClaims(body.refresh)
    expect(decodeHeader(body.access)).toMatchObject({ alg: 'HS256', typ: 'JWT' })
    expect(access).toMatchObject({ token_type: 'access', user_id: DEMO.users.alice })
    expect(refresh).toMatchObject({ token_type: 'refresh', user_id: DEMO.users.alice, fid: access.fid })
    expect(access.jti).toMatch(/^[0-9a-f]{32}$/)
    expect(refresh.jti).toMatch(/^[0-9a-f]{32}$/)
    expect(access.jti).not.toBe(refresh.jti)
    expect(Number(access.exp) - Number(access.iat)).toBe(300)
    expect(Number(refresh.exp) - Number(refresh.iat)).toBe(86_400)
    expect(access).not.toHaveProperty('iss')
  })

  it('matches the e-mail case-insensitively after trimming', async () => {
    const response = await postToken({ email: '  Alice@ACME.example ', password: DEMO_PASSWORD })
    expect(response.statusCode).toBe(200)
  })

  it('sets last_login on success', async () => {
    const before = await storedUser(DEMO.users.alice)
    expect(before.last_login).toBeNull()
    await postToken({ email: 'alice@acme.example', password: DEMO_PASSWORD })
    const after = await storedUser(DEMO.users.alice)
    expect(after.last_login).toBeInstanceOf(Date)
    expect(Math.abs(Date.now() - (after.last_login as Date).getTime())).toBeLessThan(60_000)
  })

  it.each([
    ['an unknown e-mail', { email: 'nobody@acme.example', password: DEMO_PASSWORD }],
    ['a wrong password', { email: 'alice@acme.example', password: 'wrong password' }],
    ['an inactive user', { email: 'frank@acme.example', password: DEMO_PASSWORD }],
    ['an unconfirmed migrated account', { email: 'maria@legacy.example', password: LEGACY_DEMO_PASSWORD }],
  ])('answers the same 401 no_active_account for %s', async (_case, payload) => {
    const response = await postToken(payload)
    const body = problemOf(response, 401, 'no_active_account')
    expect(body.detail).toBe('No active account found with the given credentials')
  })

  it('stores argon2id hashes with at least OWASP parameters', async () => {
    const alice = await storedUser(DEMO.users.alice)
    const match = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(alice.password_hash)
    expect(match).not.toBeNull()
    expect(Number(match?.[1])).toBeGreaterThanOrEqual(19_456)
    expect(Number(match?.[2])).toBeGreaterThanOrEqual(2)
    expect(Number(match?.[3])).toBeGreaterThanOrEqual(1)
  })

  it('logs a migrated user in with the Django password and replaces the hash with argon2id', async () => {
    expect((await storedUser(DEMO.users.lucas)).password_hash).toMatch(/^pbkdf2_sha256\$/)
    const response = await postToken({ email: 'lucas@legacy.example', password: LEGACY_DEMO_PASSWORD })
    expect(response.statusCode).toBe(200)
    const upgraded = (await storedUser(DEMO.users.lucas)).password_hash
    expect(upgraded).toMatch(/^\$argon2id\$/)
    const again = await postToken({ email: 'lucas@legacy.example', password: LEGACY_DEMO_PASSWORD })
    expect(again.statusCode).toBe(200)
    expect((await storedUser(DEMO.users.lucas)).password_hash).toBe(upgraded)
  })

  it('keeps the Django hash when the password is wrong', async () => {
    const before = (await storedUser(DEMO.users.lucas)).password_hash
    problemOf(await postToken({ email: 'lucas@legacy.example', password: 'nope' }), 401, 'no_active_account')
    expect((await storedUser(DEMO.users.lucas)).password_hash).toBe(before)
  })

  it.each([
    ['no body', undefined, 'non_field_errors'],
    ['a missing password', { email: 'alice@acme.example' }, 'password'],
    ['a missing e-mail', { password: 'x' }, 'email'],
    ['a malformed e-mail', { email: 'not-an-email', password: 'x' }, 'email'],
    ['a non-string password', { email: 'alice@acme.example', password: 123 }, 'password'],
    ['an empty password', { email: 'alice@acme.example', password: '' }, 'password'],
  ])('answers 400 invalid with per-field errors for %s', async (_case, payload, field) => {
    const response = await postToken(payload)
    const body = problemOf(response, 400, 'invalid')
    expect(Object.keys(body.errors as object)).toContain(field)
  })

  it('ignores unknown body properties', async () => {
    const response = await postToken({ email: 'alice@acme.example', password: DEMO_PASSWORD, remember_me: true })
    expect(response.statusCode).toBe(200)
  })
})

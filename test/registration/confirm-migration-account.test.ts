import type { LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { FUTURE_SKEW_SECONDS, encodeUid } from '../../src/registration/legacy-token.js'
import { DEMO, DEMO_PASSWORD, LEGACY_DEMO_PASSWORD, bearer, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import { decodeClaims } from '../helpers/jwt.js'
import { DAY_SECONDS, linkFor, linkUser, rawLink, secondsAgo, storedUser, tokenFamilies } from './links.js'

const ctx = useTestApp()
const MARIA = 'maria@legacy.example'
const LINK_DETAIL = 'The confirmation link is invalid or has expired.'

const confirm = (url: string, payload?: object, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method: 'POST', url, ...(payload === undefined ? {} : { payload }), headers })

const logIn = (email: string, password: string) => ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email, password } })

function expectInvalidLink(response: LightMyRequestResponse): void {
  const body = problemOf(response, 400, 'invalid_link')
  expect(body.detail).toBe(LINK_DETAIL)
}

describe('POST /api/registration/v1/confirm-migration-account/{uidb64}/{token}', () => {
  describe('a valid link', () => {
    it('keeps a pending account from logging in until it is confirmed', async () => {
      problemOf(await logIn(MARIA, LEGACY_DEMO_PASSWORD), 401, 'no_active_account')
    })

    it('answers 201 with a session and the user, activates the account and spends the link', async () => {
      const response = await confirm(await linkFor(MARIA), {})
      expect(response.statusCode).toBe(201)
      const body = response.json()
      expect(Object.keys(body)).toEqual(['refresh', 'access', 'user'])
      expect(body.user).toEqual({
        id: DEMO.users.maria,
        email: MARIA,
        name: 'Maria Moraes',
        last_login: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      })
      expect(decodeClaims(body.access)).toMatchObject({ token_type: 'access', user_id: DEMO.users.maria })
      expect(decodeClaims(body.refresh)).toMatchObject({ token_type: 'refresh', user_id: DEMO.users.maria })

      const stored = await storedUser(DEMO.users.maria)
      expect(stored).toMatchObject({ is_active: true, migration_state: 'confirmed', password_changed_at: null })
      expect(stored.last_login?.toISOString()).toBe(body.user.last_login)
      expect(Math.abs(Date.now() - (stored.last_login as Date).getTime())).toBeLessThan(60_000)
      expect(stored.password_hash).toMatch(/^pbkdf2_sha256\$/)
    })

    it('gives tokens that work on authenticated routes and can be refreshed', async () => {
      const body = (await confirm(await linkFor(MARIA), {})).json()
      const companies = await ctx.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(body.access) })
      expect(companies.statusCode).toBe(200)
      expect(companies.json()).toEqual([])
      const refreshed = await ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: body.refresh } })
      expect(refreshed.statusCode).toBe(200)
    })

    it('without a password keeps the old one, which then logs in', async () => {
      expect((await confirm(await linkFor(MARIA), {})).statusCode).toBe(201)
      expect((await logIn(MARIA, LEGACY_DEMO_PASSWORD)).statusCode).toBe(200)
    })

    it('with a password replaces the old one with an argon2id hash', async () => {
      const response = await confirm(await linkFor(MARIA), { password: 'a new password' })
      expect(response.statusCode).toBe(201)
      const stored = await storedUser(DEMO.users.maria)
      expect(stored.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
      expect(stored.password_changed_at).toBeInstanceOf(Date)
      expect((await logIn(MARIA, 'a new password')).statusCode).toBe(200)
      problemOf(await logIn(MARIA, LEGACY_DEMO_PASSWORD), 401, 'no_active_account')
    })

    it('accepts a password of 1024 characters', async () => {
      expect((await confirm(await linkFor(MARIA), { password: 'x'.repeat(1024) })).statusCode).toBe(201)
      expect((await logIn(MARIA, 'x'.repeat(1024))).statusCode).toBe(200)
    })

    it('accepts a password of exactly 8 characters', async () => {
      expect((await confirm(await linkFor(MARIA), { password: '12345678' })).statusCode).toBe(201)
      expect((await logIn(MARIA, '12345678')).statusCode).toBe(200)
    })

    it('accepts a link made just inside LINK_TTL (3 days by default)', async () => {
      const response = await confirm(await linkFor(MARIA, { at: secondsAgo(3 * DAY_SECONDS - 60) }), {})
      expect(response.statusCode).toBe(201)
    })

    it('accepts a link whose uidb64 is the UUID instead of the old id', async () => {
      const maria = await linkUser(MARIA)
      const link = (await linkFor(MARIA)).replace(`/${encodeUid(1042)}/`, `/${encodeUid(DEMO.users.maria)}/`)
      expect(link).toContain(encodeUid(DEMO.users.maria))
      expect(maria.legacy_id).toBe(1042)
      expect((await confirm(link, {})).statusCode).toBe(201)
    })

    it('answers with or without a trailing slash, and ignores unknown body properties', async () => {
      const response = await confirm(`${await linkFor(MARIA)}/`, { remember_me: true })
      expect(response.statusCode).toBe(201)
    })

    it('needs no bearer token (a public route)', async () => {
      const response = await confirm(await linkFor(MARIA), {}, bearer('not-a-jwt'))
      expect(response.statusCode).toBe(201)
    })
  })

  describe('the body', () => {
    it('may be absent, without a Content-Type', async () => {
      const response = await confirm(await linkFor(MARIA))
      expect(response.statusCode).toBe(201)
      expect((await storedUser(DEMO.users.maria)).password_hash).toMatch(/^pbkdf2_sha256\$/)
    })

    it.each([
      ['a password of 7 characters', { password: '1234567' }],
      ['a password of 1025 characters', { password: 'x'.repeat(1025) }],
      ['a password that is not a string', { password: 12345678 }],
      // pg would hash U+FFFD in its place: any other lone surrogate would then log in too.
      ['a password with a lone surrogate', { password: 'new-pass\ud800word' }],
    ])('answers 400 invalid with errors.password for %s, and does not spend the link', async (_case, payload) => {
      const link = await linkFor(MARIA)
      const body = problemOf(await confirm(link, payload), 400, 'invalid')
      expect(Object.keys(body.errors as object)).toEqual(['password'])
      expect((await storedUser(DEMO.users.maria)).migration_state).toBe('pending')
      expect((await confirm(link, {})).statusCode).toBe(201)
    })
  })

  describe('a link that is not valid', () => {
    it('is refused the second time it is used', async () => {
      const link = await linkFor(MARIA)
      expect((await confirm(link, {})).statusCode).toBe(201)
      expectInvalidLink(await confirm(link, {}))
      expectInvalidLink(await confirm(link, { password: 'another password' }))
      expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
    })

    it('is refused once LINK_TTL has passed', async () => {
      expectInvalidLink(await confirm(await linkFor(MARIA, { at: secondsAgo(3 * DAY_SECONDS + 60) }), {}))
      expect((await storedUser(DEMO.users.maria)).migration_state).toBe('pending')
    })

    it('is refused when its timestamp is further in the future than the clock skew allowed', async () => {
      expectInvalidLink(await confirm(await linkFor(MARIA, { at: secondsAgo(-FUTURE_SKEW_SECONDS - 60) }), {}))
    })

    it('is refused when signed with a secret the service does not have', async () => {
      expectInvalidLink(await confirm(await linkFor(MARIA, { secret: 'some-other-secret' }), {}))
    })

    it('is refused when the password changed after it was made', async () => {
      const link = await linkFor(MARIA)
      const maria = await linkUser(MARIA)
      const { db } = await testDatabase()
      await db
        .updateTable('users')
        .set({ password_hash: `${maria.password_hash}x` })
        .where('id', '=', maria.id)
        .execute()
      expectInvalidLink(await confirm(link, {}))
    })

    it.each([
      ['a changed last character', (token: string) => token.slice(0, -1) + (token.endsWith('0') ? '1' : '0')],
      ['a changed timestamp', (token: string) => `${(parseInt(token.split('-')[0] ?? '', 36) - 1).toString(36)}-${token.split('-')[1]}`],
      ['a truncated hash', (token: string) => token.slice(0, -2)],
      ['the hash alone', (token: string) => token.split('-')[1] ?? ''],
      ['upper case', (token: string) => token.toUpperCase()],
      ['garbage', () => 'not-a-token'],
    ])('is refused with a tampered token: %s', async (_case, tamper) => {
      const link = await linkFor(MARIA)
      const token = link.slice(link.lastIndexOf('/') + 1)
      expectInvalidLink(await confirm(`${link.slice(0, link.lastIndexOf('/'))}/${tamper(token)}`, {}))
      expect((await confirm(link, {})).statusCode).toBe(201)
    })

    it.each([
      ['not base64', '!!!'],
      ['padded', 'MTA0Mg=='],
      ['not an id', encodeUid('maria')],
      ['an id beyond the integer column', encodeUid('99999999999')],
      ['a malformed UUID', encodeUid('10000000-0000-4000-8000-00000000007')],
    ])('is refused when the uidb64 is malformed: %s', async (_case, uidb64) => {
      const link = await linkFor(MARIA)
      const token = link.slice(link.lastIndexOf('/') + 1)
      expectInvalidLink(await confirm(`/api/registration/v1/confirm-migration-account/${uidb64}/${token}`, {}))
    })

    it('is refused for an unknown user, however well made', async () => {
      const maria = await linkUser(MARIA)
      const subject = { hashId: '9999', passwordHash: maria.password_hash, lastLogin: null, email: 'ghost@legacy.example' }
      expectInvalidLink(await confirm(rawLink(9999, subject), {}))
      expectInvalidLink(await confirm(rawLink('10000000-0000-4000-8000-000000000099', subject), {}))
    })

    it('is refused for an account already confirmed (lucas), though its hash is right', async () => {
      const lucas = await storedUser(DEMO.users.lucas)
      const subject = { hashId: '1043', passwordHash: lucas.password_hash, lastLogin: lucas.last_login, email: lucas.email }
      expectInvalidLink(await confirm(rawLink(1043, subject), { password: 'taking over lucas' }))
      expect((await logIn('lucas@legacy.example', LEGACY_DEMO_PASSWORD)).statusCode).toBe(200)
    })

    it('never re-activates a disabled user who was not migrated (frank)', async () => {
      const frank = await storedUser(DEMO.users.frank)
      const subject = { hashId: frank.id, passwordHash: frank.password_hash, lastLogin: frank.last_login, email: frank.email }
      expectInvalidLink(await confirm(rawLink(frank.id, subject), {}))
      expect((await storedUser(DEMO.users.frank)).is_active).toBe(false)
      problemOf(await logIn('frank@acme.example', DEMO_PASSWORD), 401, 'no_active_account')
    })
  })

  describe('concurrency', () => {
    it('confirms exactly once when the same link is posted concurrently', async () => {
      const link = await linkFor(MARIA)
      // Identical requests (no password to hash) reach the database together, where the race is.
      const responses = await Promise.all(Array.from({ length: 4 }, () => confirm(link, {})))
      const statuses = responses.map((response) => response.statusCode).sort()
      expect(statuses).toEqual([201, 400, 400, 400])
      for (const response of responses.filter((r) => r.statusCode === 400)) expectInvalidLink(response)
      expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
    })
  })
})

import { describe, expect, it } from 'vitest'
import { DEMO, problemOf, useTestApp } from '../helpers/app.js'
import { DAY_SECONDS, linkFor, secondsAgo, storedUser } from './links.js'

// The old platform's key is being rotated out: links it already e-mailed must keep working.
const ctx = useTestApp({
  LEGACY_SECRET_KEY: 'the-new-legacy-secret',
  LEGACY_SECRET_KEY_FALLBACKS: 'rotated-out-secret,an-even-older-secret',
  LINK_TTL: '1h',
})
const MARIA = 'maria@legacy.example'
const confirm = async (url: string) => ctx.app.inject({ method: 'POST', url, payload: {} })

describe('confirmation links across a LEGACY_SECRET_KEY rotation', () => {
  it('accepts a link signed with the current secret', async () => {
    expect((await confirm(await linkFor(MARIA, { secret: 'the-new-legacy-secret' }))).statusCode).toBe(201)
  })

  it.each([['rotated-out-secret'], ['an-even-older-secret']])('accepts a link signed with the fallback %s', async (secret) => {
    expect((await confirm(await linkFor(MARIA, { secret }))).statusCode).toBe(201)
    expect((await storedUser(DEMO.users.maria)).migration_state).toBe('confirmed')
  })

  it('refuses a link signed with any other secret', async () => {
    problemOf(await confirm(await linkFor(MARIA, { secret: 'never-configured' })), 400, 'invalid_link')
  })

  it('applies LINK_TTL from the configuration', async () => {
    expect((await confirm(await linkFor(MARIA, { secret: 'rotated-out-secret', at: secondsAgo(3600 + 60) }))).statusCode).toBe(400)
    expect((await confirm(await linkFor(MARIA, { secret: 'rotated-out-secret', at: secondsAgo(DAY_SECONDS / 24 - 60) }))).statusCode).toBe(201)
  })
})

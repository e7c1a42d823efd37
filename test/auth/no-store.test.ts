import { describe, expect, it } from 'vitest'
import { DEMO_PASSWORD, obtainTokens, useTestApp } from '../helpers/app.js'
import { linkFor } from '../registration/links.js'

const ctx = useTestApp()
const ALICE = { email: 'alice@acme.example', password: DEMO_PASSWORD }

describe('answers that carry tokens are never cached (RFC 6749 §5.1)', () => {
  it('sends Cache-Control: no-store on routes 1, 2, 3 and 10, success and failure alike', async () => {
    const { refresh } = await obtainTokens(ctx.app, ALICE.email, ALICE.password)
    const answers = await Promise.all([
      ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: ALICE }),
      ctx.app.inject({ method: 'POST', url: '/api/auth/v1/login', payload: ALICE }),
      ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh } }),
      ctx.app.inject({ method: 'POST', url: await linkFor('maria@legacy.example'), payload: {} }),
      ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { ...ALICE, password: 'wrong' } }),
      ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: 'x' } }),
    ])
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 200, 201, 401, 401])
    for (const answer of answers) {
      expect(answer.headers['cache-control']).toBe('no-store')
      expect(answer.headers.pragma).toBe('no-cache')
    }
  })

  it('leaves other routes to their own caching', async () => {
    const jwks = await ctx.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })
    expect(jwks.headers['cache-control']).toBe('public, max-age=300')
  })
})

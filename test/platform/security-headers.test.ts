import { describe, expect, it } from 'vitest'
import { bearer, DEMO_PASSWORD, obtainTokens, useTestApp } from '../helpers/app.js'

const ctx = useTestApp()

describe('security headers on every answer (issue 15, Info)', () => {
  it('marks API answers, errors and unknown routes nosniff, unframeable and loading nothing', async () => {
    const { access } = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const answers = await Promise.all([
      ctx.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) }),
      ctx.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies' }),
      ctx.app.inject({ method: 'GET', url: '/no/such/route' }),
      ctx.app.inject({ method: 'GET', url: '/health/live' }),
    ])
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 401, 404, 200])
    for (const answer of answers) {
      expect(answer.headers['x-content-type-options']).toBe('nosniff')
      expect(answer.headers['x-frame-options']).toBe('DENY')
      expect(answer.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'")
      expect(answer.headers['referrer-policy']).toBe('no-referrer')
      expect(answer.headers['cross-origin-resource-policy']).toBe('same-origin')
      expect(answer.headers['strict-transport-security']).toBeUndefined()
    }
  })

  it("gives /docs swagger-ui's own policy, which still may not be framed", async () => {
    const page = await ctx.app.inject({ method: 'GET', url: '/docs' })
    expect(page.statusCode).toBe(200)
    const policy = page.headers['content-security-policy']
    expect(policy).toContain("default-src 'self'")
    expect(policy).toContain("object-src 'none'")
    expect(policy).toContain("frame-ancestors 'none'")
    expect(policy).not.toContain('upgrade-insecure-requests')
    expect(page.headers['x-frame-options']).toBe('DENY')
    expect(page.headers['x-content-type-options']).toBe('nosniff')
  })
})

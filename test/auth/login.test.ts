import { describe, expect, it } from 'vitest'
import { bearer, DEMO, DEMO_PASSWORD, LEGACY_DEMO_PASSWORD, problemOf, useTestApp } from '../helpers/app.js'
import { decodeClaims } from '../helpers/jwt.js'

const ctx = useTestApp()
const postLogin = (payload: unknown) => ctx.app.inject({ method: 'POST', url: '/api/auth/v1/login', payload: payload as object })

describe('POST /api/auth/v1/login', () => {
  it('answers 200 with tokens, the user and the companies of route 4', async () => {
    const response = await postLogin({ email: 'dave@delta.example', password: DEMO_PASSWORD })
    expect(response.statusCode).toBe(200)
    const body = response.json()
    expect(Object.keys(body)).toEqual(['refresh', 'access', 'user', 'companies'])
    expect(decodeClaims(body.access)).toMatchObject({ token_type: 'access', user_id: DEMO.users.dave })
    expect(body.user).toMatchObject({ id: DEMO.users.dave, email: 'dave@delta.example', name: 'Dave Duarte' })
    expect(Math.abs(Date.parse(body.user.last_login) - Date.now())).toBeLessThan(60_000)
    expect(body.user.last_login).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)

    const companies = await ctx.app.inject({
      method: 'GET',
      url: '/api/company/v1/get-user-companies',
      headers: bearer(body.access),
    })
    expect(body.companies).toEqual(companies.json())
    expect(body.companies[0].roles.map((role: { role: string }) => role.role)).toEqual(['buyer', 'seller'])
  })

  it('follows the token route rules: same 401 for every failure', async () => {
    for (const payload of [
      { email: 'nobody@x.example', password: 'x' },
      { email: 'alice@acme.example', password: 'wrong' },
      { email: 'frank@acme.example', password: DEMO_PASSWORD },
      { email: 'maria@legacy.example', password: LEGACY_DEMO_PASSWORD },
    ]) {
      const body = problemOf(await postLogin(payload), 401, 'no_active_account')
      expect(body.detail).toBe('No active account found with the given credentials')
    }
  })

  it('answers 400 invalid for a bad body', async () => {
    const body = problemOf(await postLogin({ email: 42 }), 400, 'invalid')
    expect(body.errors).toMatchObject({ email: expect.any(Array), password: ['This field is required.'] })
  })

  it('answers 400 invalid, not 401, to a password with a lone surrogate', async () => {
    const body = problemOf(await postLogin({ email: 'alice@acme.example', password: `${DEMO_PASSWORD}\udfff` }), 400, 'invalid')
    expect(Object.keys(body.errors as object)).toEqual(['password'])
  })

  it('lets a migrated, confirmed user log in with the old password', async () => {
    const response = await postLogin({ email: 'lucas@legacy.example', password: LEGACY_DEMO_PASSWORD })
    expect(response.statusCode).toBe(200)
    expect(response.json().companies).toEqual([
      {
        id: DEMO.companies.beta,
        name: 'Fundo Beta FIDC',
        trade_name: 'Beta FIDC',
        tax_id: '28456789000109',
        roles: [{ company_role_id: DEMO.roles.betaBuyer, role: 'buyer', permissions: ['marketplace'] }],
      },
    ])
  })
})

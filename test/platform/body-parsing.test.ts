import { describe, expect, it } from 'vitest'
import { problemOf, useTestApp } from '../helpers/app.js'
import { linkFor } from '../registration/links.js'

/*
 * How every JSON route reads its body before any rule of its own: each body below, on each public
 * route that takes one (the login, the refresh, the migrated account's confirmation, whose body is
 * optional). The answers differ only where the route's body may be empty.
 */

const ctx = useTestApp()

interface Body {
  contentType?: string
  payload: string | Record<string, unknown>
}

const BODIES = {
  'malformed JSON': { contentType: 'application/json', payload: '{"password": ' },
  // The parser refuses it: an own __proto__ key would otherwise reach the validator as the prototype.
  'JSON with a __proto__ key': { contentType: 'application/json', payload: '{"__proto__": {"password": "12345678"}}' },
  'a form (application/x-www-form-urlencoded)': { contentType: 'application/x-www-form-urlencoded', payload: 'password=12345678' },
  'JSON-looking text/plain': { contentType: 'text/plain', payload: '{"refresh":"x"}' },
  'a body over 16 KiB': { payload: { email: 'alice@acme.example', password: 'x'.repeat(17 * 1024) } },
  'JSON that is not an object (null)': { contentType: 'application/json', payload: 'null' },
  'an empty body with Content-Type application/json': { contentType: 'application/json', payload: '' },
} satisfies Record<string, Body>

type BodyName = keyof typeof BODIES
type Answer = [status: number, code: string | undefined]

const SHARED: Record<Exclude<BodyName, 'an empty body with Content-Type application/json'>, Answer> = {
  'malformed JSON': [400, 'parse_error'],
  'JSON with a __proto__ key': [400, 'parse_error'],
  'a form (application/x-www-form-urlencoded)': [415, 'unsupported_media_type'],
  'JSON-looking text/plain': [415, 'unsupported_media_type'],
  'a body over 16 KiB': [413, 'payload_too_large'],
  'JSON that is not an object (null)': [400, 'invalid'],
}

const ROUTES: { name: string; url: () => Promise<string>; emptyBody: Answer }[] = [
  { name: 'POST /api/auth/v1/token', url: async () => '/api/auth/v1/token', emptyBody: [400, 'parse_error'] },
  { name: 'POST /api/auth/v1/token/refresh', url: async () => '/api/auth/v1/token/refresh', emptyBody: [400, 'parse_error'] },
  // A fresh link each time: the case must not depend on another having spent it.
  { name: 'POST /api/registration/v1/confirm-migration-account', url: () => linkFor('maria@legacy.example'), emptyBody: [201, undefined] },
]

describe.each(ROUTES)('$name reads its body', ({ url, emptyBody }) => {
  const expected: Record<BodyName, Answer> = { ...SHARED, 'an empty body with Content-Type application/json': emptyBody }
  it.each(Object.entries(BODIES) as [BodyName, Body][])('%s', async (name, { contentType, payload }) => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: await url(),
      payload,
      ...(contentType ? { headers: { 'content-type': contentType } } : {}),
    })
    const [status, code] = expected[name]
    if (code === undefined) expect(response.statusCode, response.body).toBe(status)
    else problemOf(response, status, code)
  })
})

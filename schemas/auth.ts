import { Type, type Static } from '@sinclair/typebox'
import { Errors, Nullable, Timestamp, Uuid } from './common.js'
import { UserCompanies } from './company.js'

const Jwt = Type.String({ description: 'JWT (SimpleJWT claim names)' })

export const TokenRequest = Type.Object({
  email: Type.String({ format: 'email', maxLength: 254 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
})
export type TokenRequest = Static<typeof TokenRequest>

export const TokenPairResponse = Type.Object({ refresh: Jwt, access: Jwt })

export const RefreshRequest = Type.Object({ refresh: Type.String({ minLength: 1, maxLength: 4096 }) })
export type RefreshRequest = Static<typeof RefreshRequest>

export const RefreshResponse = Type.Object({ access: Jwt, refresh: Jwt })

export const SessionUser = Type.Object({
  id: Uuid,
  email: Type.String({ format: 'email' }),
  name: Type.String(),
  last_login: Nullable(Timestamp),
})

export const LoginResponse = Type.Object({
  refresh: Jwt,
  access: Jwt,
  user: SessionUser,
  companies: UserCompanies,
})

const credentialErrors = {
  400: Errors[400],
  401: Errors[401],
  413: Errors[413],
  415: Errors[415],
  429: Errors[429],
  503: Errors[503],
}

export const tokenRouteSchema = {
  tags: ['auth'],
  summary: 'Obtain an access and a refresh token',
  description:
    'E-mail (case-insensitive, trimmed) and password. Every failure is `401 no_active_account`; repeated failures are `429`.',
  body: TokenRequest,
  response: { 200: TokenPairResponse, ...credentialErrors },
}

export const loginRouteSchema = {
  tags: ['auth'],
  summary: "Log in (the platform application's bootstrap call)",
  description: 'Same rules as the token route; also returns the user and their companies.',
  body: TokenRequest,
  response: { 200: LoginResponse, ...credentialErrors },
}

export const refreshRouteSchema = {
  tags: ['auth'],
  summary: 'Rotate a refresh token',
  description:
    'Spends the refresh token and returns a new pair of the same family. Replaying a spent token revokes the whole family.',
  body: RefreshRequest,
  response: { 200: RefreshResponse, 400: Errors[400], 401: Errors[401], 413: Errors[413], 415: Errors[415], 503: Errors[503] },
}

export const Jwks = Type.Object({
  keys: Type.Array(Type.Object({ kty: Type.String(), kid: Type.String(), alg: Type.String(), use: Type.String() }, { additionalProperties: true })),
})

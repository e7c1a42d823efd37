import { Type, type Static } from '@sinclair/typebox'
import { Nullable, Timestamp, Uuid } from './common.js'
import { UserCompanies } from './company.js'
import { ACME_COMPANIES, ALICE, DEMO_LOGIN, DEMO_REFRESHED, DEMO_TOKENS } from './examples.js'
import { BODY_PROBLEMS, invalid, jsonResponse, Problems, routeResponses, tokenResponse, when, withExamples } from './responses.js'

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

const noActiveAccount = {
  status: 401,
  code: 'no_active_account',
  detail: 'No active account found with the given credentials',
  when: 'Unknown e-mail, wrong password, inactive user or unconfirmed migrated account (one answer for all, in the same time)',
} as const

const loginBody = withExamples(TokenRequest, {
  alice: { summary: 'alice@acme.example, Acme seller (demo password)', value: DEMO_LOGIN },
  bob: { summary: 'bob@beta.example, Beta buyer (demo password)', value: { email: 'bob@beta.example', password: DEMO_LOGIN.password } },
})

const credentialProblems = [
  invalid(
    { email: ['Must be a valid email.'], password: ['This field is required.'] },
    '`email` or `password` is missing or malformed; `errors` lists the messages per field',
  ),
  ...BODY_PROBLEMS,
  noActiveAccount,
  Problems.throttled,
]

export const tokenRouteSchema = {
  operationId: 'obtainTokenPair',
  tags: ['auth'],
  summary: 'Obtain an access and a refresh token',
  description:
    'E-mail (case-insensitive, trimmed) and password. Send the `access` token as `Authorization: Bearer <access>` ' +
    '(valid 5 minutes); renew it with the refresh route (the `refresh` token is valid 1 day). Every failure is ' +
    '`401 no_active_account`; repeated failures are `429` with `Retry-After`. Concurrent logins of one e-mail from one client wait for each other, so a burst of correct ones is served.',
  body: loginBody,
  response: routeResponses(
    { 200: tokenResponse('The token pair', TokenPairResponse, { alice: { summary: 'alice@acme.example logged in', value: DEMO_TOKENS } }) },
    credentialProblems,
  ),
}

export const loginRouteSchema = {
  operationId: 'logIn',
  tags: ['auth'],
  summary: "Log in (the platform application's bootstrap call)",
  description: 'Same body, rules and errors as the token route; also returns the user and their companies (as route 4).',
  body: loginBody,
  response: routeResponses(
    {
      200: jsonResponse('The token pair, the user and their companies', LoginResponse, {
        alice: { summary: 'alice@acme.example logged in', value: { ...DEMO_TOKENS, user: ALICE, companies: ACME_COMPANIES } },
      }),
    },
    credentialProblems,
  ),
}

export const refreshRouteSchema = {
  operationId: 'refreshTokens',
  tags: ['auth'],
  summary: 'Rotate a refresh token',
  description:
    'Spends the refresh token and returns a new pair of the same family: keep the new `refresh`, the old one is ' +
    'now spent. A retry is safe: the spent token sent again within `REFRESH_REUSE_GRACE` (30 s by default) of its ' +
    'rotation, while its successor is unused, answers 200 with that same successor `refresh` (byte for byte) and a ' +
    'fresh `access`. Replaying a spent token after the grace, or once its successor was used, revokes the whole ' +
    'family (every token of that login).',
  body: withExamples(RefreshRequest, { alice: { summary: "alice's refresh token from the token route", value: { refresh: DEMO_TOKENS.refresh } } }),
  response: routeResponses(
    {
      200: tokenResponse('A new access token and the next refresh token of the family', RefreshResponse, {
        alice: { summary: 'Rotated', value: DEMO_REFRESHED },
      }),
    },
    [
      invalid({ refresh: ['This field is required.'] }, '`refresh` is missing or not a string'),
      ...BODY_PROBLEMS,
      when(
        Problems.tokenNotValid,
        'The refresh token is malformed, expired, forged, an access token, already spent and past its retry grace (which revokes its family) or ' +
          "past the family's absolute lifetime, or its user was disabled",
      ),
    ],
  ),
}

export const Jwks = Type.Object({
  keys: Type.Array(
    Type.Object(
      {
        kty: Type.String(),
        kid: Type.String({ description: 'RFC 7638 thumbprint; the `kid` of the token header' }),
        alg: Type.String(),
        use: Type.String(),
      },
      { additionalProperties: true, description: 'A public JWK (RFC 7517)' },
    ),
  ),
})

const ED25519_JWK = {
  kty: 'OKP',
  crv: 'Ed25519',
  x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
  kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k',
  alg: 'EdDSA',
  use: 'sig',
}

export const jwksRouteSchema = {
  operationId: 'getJsonWebKeySet',
  tags: ['auth'],
  summary: 'Public keys of the token signer (JWKS)',
  description:
    'Public; cacheable for 5 minutes. With a key pair (EdDSA or RS256) a gateway verifies access tokens with these keys, ' +
    "chosen by the token header's `kid`: the signing key first, then the previous ones (`JWT_PUBLIC_KEY_FALLBACKS`) " +
    'whose tokens still live; with the default shared secret (HS256) the set is empty.',
  response: routeResponses(
    {
      200: jsonResponse('The key set', Jwks, {
        eddsa: {
          summary: 'Signed with an Ed25519 key pair',
          value: {
            keys: [ED25519_JWK],
          },
        },
        hs256: { summary: 'Signed with a shared secret: no public key', value: { keys: [] } },
      }),
    },
    [],
  ),
}

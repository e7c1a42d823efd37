import { Type, type Static } from '@sinclair/typebox'
import { SessionUser, TokenPairResponse } from './auth.js'
import { OPTIONAL_BODY } from './common.js'
import { DEMO_TOKENS, MARIA } from './examples.js'
import { IDEMPOTENCY_PROBLEMS, IdempotencyHeaders, IdempotencyProblems, replayable } from './idempotency.js'
import { invalid, Problems, routeResponses, tokenResponse, when, withExample, withExamples } from './responses.js'

/** Not constrained here: every malformed link must be the same `invalid_link`, not a validation error. */
export const ConfirmMigrationParams = Type.Object({
  uidb64: withExample(Type.String({ description: "URL-safe base64 (no padding) of the user's old integer id, or of their UUID" }), 'MTA0Mg'),
  token: withExample(
    Type.String({ description: "`<base36 timestamp>-<hash>`, as made by Django's PasswordResetTokenGenerator" }),
    'cv8h1k-0f6e2a9d4c7b1e3f5a8d2c6b9e0f1a3d',
  ),
})
export type ConfirmMigrationParams = Static<typeof ConfirmMigrationParams>

export const ConfirmMigrationRequest = Type.Object(
  {
    password: Type.Optional(Type.String({ minLength: 8, maxLength: 1024, description: 'Replaces the password kept from the old platform' })),
  },
  { description: 'Optional: no body, or an empty one, is the same as `{}`.' },
)
export type ConfirmMigrationRequest = Static<typeof ConfirmMigrationRequest>

export const ConfirmMigrationResponse = Type.Object({
  ...TokenPairResponse.properties,
  user: SessionUser,
})

export const confirmMigrationRouteSchema = {
  [OPTIONAL_BODY]: true,
  operationId: 'confirmMigratedAccount',
  tags: ['registration'],
  summary: 'Confirm an account migrated from the old platform',
  description: [
    'Public. The link is the one the old platform e-mailed (Django `PasswordResetTokenGenerator`, SHA-256) or one made',
    'with `npm run confirmation-link -- <email>`; it is valid for `LINK_TTL` (default 3 days) and is checked against',
    '`LEGACY_SECRET_KEY` and each of `LEGACY_SECRET_KEY_FALLBACKS`. A timestamp more than 5 minutes in the future is',
    'refused.',
    '',
    'On success the account is active, `last_login` is set (which spends the link) and a session starts, as at login.',
    'With `password` the new password replaces the old one; without it the old password stays valid.',
    'The body is optional: no body, or an empty body, is the same as `{}`.',
    '',
    'A malformed `uidb64`, an unknown or already confirmed user, and a wrong, tampered, expired or used token are all',
    '`400 invalid_link`.',
    '',
    'With `Idempotency-Key`, a retry after a lost answer gets the same `201` (the same tokens) instead of',
    '`invalid_link`, within `REFRESH_REUSE_GRACE` (30 s) of the first answer: a session is never handed out again longer than a',
    'spent refresh token gets its successor. Later, `409 idempotency_replay_expired`: the account is confirmed, log in. No user is known before the link is checked, so a key belongs to the link (the path): the same key',
    'with another link is another key. Only the `201` is kept: an `invalid_link` answer reserves nothing.',
  ].join('\n'),
  params: ConfirmMigrationParams,
  headers: IdempotencyHeaders,
  body: withExamples(ConfirmMigrationRequest, {
    keep: { summary: 'Keep the password of the old platform', value: {} },
    replace: { summary: 'Set a new password', value: { password: 'a new long passphrase' } },
  }),
  response: routeResponses(
    {
      201: replayable(
        tokenResponse('The account is confirmed and a session starts', ConfirmMigrationResponse, {
          maria: { summary: 'maria@legacy.example (old id 1042, uidb64 `MTA0Mg`) confirmed', value: { ...DEMO_TOKENS, user: MARIA } },
        }),
      ),
    },
    [
      {
        status: 400,
        code: 'invalid_link',
        detail: 'The confirmation link is invalid or has expired.',
        when: 'A malformed `uidb64`, an unknown or already confirmed user, or a wrong, tampered, expired or used token',
      },
      invalid({ password: ['Must NOT have fewer than 8 characters.'] }, '`password` is not 8 to 1024 characters'),
      when(Problems.parseError, 'The body is not JSON (an empty body is `{}`), or nests arrays and objects deeper than 64 levels'),
      Problems.requestTimeout,
      Problems.payloadTooLarge,
      Problems.unsupportedMediaType,
      ...IDEMPOTENCY_PROBLEMS,
      IdempotencyProblems.replayExpired,
    ],
  ),
}

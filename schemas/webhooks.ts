import { Type, type Static } from '@sinclair/typebox'
import { Nullable } from './common.js'
import { CLOSE_NOTIFICATION, SIGN_NOTIFICATION } from './examples.js'
import { invalid, jsonResponse, Problems, routeResponses, when, withExample, withExamples } from './responses.js'

export const EsignWebhookParams = Type.Object({
  secret: withExample(Type.String({ description: 'One of `ESIGN_WEBHOOK_SECRETS`; anything else is `404`' }), 'demo-esign-secret'),
})

export const EsignWebhookHeaders = Type.Object({
  'content-hmac': Type.Optional(
    Type.String({
      description: 'Required when `ESIGN_WEBHOOK_HMAC_KEY` is set: `sha256=<hex HMAC-SHA256 of the raw body>`',
    }),
  ),
})

/** The provider's notification; unknown properties are kept (the raw body is stored as received). */
export const EsignNotification = Type.Object(
  {
    event: Type.Object({
      name: Type.String({ minLength: 1, maxLength: 100, description: 'Event name, e.g. `sign`, `close`, `cancel`' }),
      occurred_at: Type.String({ format: 'date-time', description: 'RFC 3339 timestamp; any UTC offset is accepted' }),
      data: Type.Optional(
        Nullable(
          Type.Object(
            {},
            {
              additionalProperties: true,
              description:
                "Event details. For `sign` and `refusal`, the signer's e-mail is read from `signer.email` " +
                '(also accepted: `signer_email`, `email`).',
            },
          ),
        ),
      ),
    }),
    document: Type.Object({
      key: Type.String({ minLength: 1, maxLength: 200, description: 'The envelope key' }),
      status: Type.Optional(Type.String({ description: "The provider's document status (informative only)" })),
    }),
  },
  { description: 'An e-signature provider notification' },
)
export type EsignNotification = Static<typeof EsignNotification>

export const EsignWebhookReceipt = Type.Object({
  received: Type.Literal(true),
  duplicate: Type.Boolean({ description: 'True when this exact body was received before; nothing changed' }),
})

export const esignWebhookRouteSchema = {
  operationId: 'receiveEsignNotification',
  tags: ['webhooks'],
  summary: 'E-signature provider notification',
  description: [
    'Public; the path secret authenticates the provider (several secrets may be active, for rotation). An unknown ' +
      'secret is `404`, as for a route that does not exist; past `LOGIN_FAILURES_PER_ADDRESS` wrong secrets from one ' +
      'address within `LOGIN_FAILURE_WINDOW`, anything from it is `429` with `Retry-After`. With `ESIGN_WEBHOOK_HMAC_KEY` set, `Content-Hmac` must ' +
      'carry the HMAC-SHA256 of the raw body (`401 invalid_signature`), checked before the body is parsed. Body limit 1 MiB.',
    'Every accepted delivery is stored as received, with the hex SHA-256 of the raw body as its dedupe key, in the ' +
      'same transaction that applies it; a body received before is answered `duplicate: true` and changes nothing. ' +
      'Rejected requests (`4xx`) are not stored.',
    'Events, applied to the envelope `document.key`: `sign` marks the signer signed; `refusal` marks the signer ' +
      'refused and the envelope refused; `close`, `auto_close` and `document_closed` mark the envelope signed ' +
      '(`completed_at` = `occurred_at`); `cancel` cancelled; `deadline` expired. Signers are found by e-mail in ' +
      '`event.data.signer.email` (or `event.data.signer_email`, `event.data.email`), case-insensitively.',
    'Final envelope states (`signed`, `refused`, `cancelled`, `expired`) never change. An event older than the last ' +
      'one applied never overwrites it: envelope events compare with the envelope, signer events with the signer. ' +
      'A closed envelope takes no signer event that happened after it closed, and a completed one takes no refusal. ' +
      'Other event names, unknown signers and unknown envelope keys are stored and answered `201` as well, so that ' +
      'the provider stops retrying. `document.status` is informative only: events drive the state.',
  ].join('\n\n'),
  params: EsignWebhookParams,
  headers: EsignWebhookHeaders,
  body: withExamples(EsignNotification, {
    sign: { summary: 'bob@beta.example signed the contract of title 1', value: SIGN_NOTIFICATION },
    close: { summary: 'The envelope of title 1 was completed', value: CLOSE_NOTIFICATION },
  }),
  response: routeResponses(
    {
      201: jsonResponse('Stored (and applied, when new)', EsignWebhookReceipt, {
        first: { summary: 'A new delivery', value: { received: true, duplicate: false } },
        repeated: { summary: 'The same body again: nothing changed', value: { received: true, duplicate: true } },
      }),
    },
    [
      invalid(
        { 'event.occurred_at': ['Must be a valid date-time.'] },
        'The body is not a notification object (`event.name`, `event.occurred_at`, `document.key`)',
      ),
      { ...Problems.parseError },
      {
        status: 401,
        code: 'invalid_signature',
        detail: 'The Content-Hmac header is missing or does not match the body.',
        when: 'With `ESIGN_WEBHOOK_HMAC_KEY` set: `Content-Hmac` is missing or wrong',
      },
      when(Problems.notFound, 'Unknown secret, as for a route that does not exist'),
      Problems.requestTimeout,
      when(Problems.payloadTooLarge, 'The body is over 1 MiB'),
      Problems.unsupportedMediaType,
      when(Problems.throttled, 'Too many wrong secrets from this address; wait `Retry-After` seconds'),
    ],
  ),
}

import packageJson from '../package.json' with { type: 'json' }

/**
 * The document-level parts of the OpenAPI document (src/plugins/docs.ts): what a partner reads
 * first in `/docs`, the security scheme and the tags. Operations come from the route schemas.
 */

const GETTING_STARTED = `
## Getting started

**Base URL.** Every path below is relative to the address the gateway publishes for this API: the
servers of this document are the host serving it, a local demo (\`http://localhost:3000\`, \`npm
start\`) and the gateway (\`https://{host}\`). Every route also answers with a trailing slash. Bodies are JSON
(\`Content-Type: application/json\`), at most 16 KiB (1 MiB on the webhook); unknown body properties
are ignored.

**1. Get tokens.** \`POST /api/auth/v1/token\` with \`{ "email", "password" }\` answers
\`{ "refresh", "access" }\` (the demo users of a fresh embedded database, such as
\`alice@acme.example\`, have the password \`Demo#2026!\`). A wrong e-mail or password is
\`401 no_active_account\`; repeated failures are \`429 throttled\` with \`Retry-After\`.

**2. Call the API.** Send \`Authorization: Bearer <access>\` on every other route (in this page:
**Authorize**, then paste the \`access\` value). Start with \`GET /api/company/v1/get-user-companies\`:
each role's \`company_role_id\` is the id the company-role routes take in their path. A missing token is
\`401 not_authenticated\`; a bad or expired one \`401 token_not_valid\`; every \`401\` carries
\`WWW-Authenticate: Bearer realm="api"\`.

**3. Refresh.** The access token lives 5 minutes, the refresh token 1 day. \`POST
/api/auth/v1/token/refresh\` with \`{ "refresh" }\` answers a new \`{ "access", "refresh" }\`: the refresh
token presented is spent, keep the new one. Presenting a spent refresh token again revokes every
token of that login (it looks like theft); a login's tokens never outlive 30 days. When refreshing
fails with \`401\`, log in again.

**Errors** are RFC 9457 problem details, \`Content-Type: application/problem+json\`, compatible with
the old Django REST Framework API:

\`\`\`json
{ "type": "urn:problem:invalid", "title": "Bad Request", "status": 400,
  "detail": "Invalid input.", "code": "invalid", "errors": { "email": ["Must be a valid email."] } }
\`\`\`

Branch on \`code\` (stable machine word) and show \`detail\` (human sentence). \`400 invalid\` lists the
messages per field path in \`errors\`. Another company's ids answer \`404 not_found\`, exactly as if they
did not exist; a missing permission is \`403 permission_denied\`, a role of the wrong kind
\`403 wrong_role\`. Every route checks in one order: the token (\`401\`), then the path and body
(\`400\`), then the token's user (\`401\`), the membership of \`{company_role_id}\` (\`404\`), the role's kind
and the permission (\`403\`). \`503 service_unavailable\` (with \`Retry-After\`) is always safe to retry; \`500
server_error\` carries no details, quote the \`X-Request-Id\` response header to support.

**Request ids.** Send \`X-Request-Id\` (letters, digits, \`._:-\`, up to 128) to trace a call end to end;
it is echoed on the response (one is made when absent).

**Retrying safely.** A call whose answer never came (a timeout, a reset connection, a gateway's
\`502\` or \`504\`) may or may not have been done. Send it again only where that is safe:
- any \`GET\`;
- the \`POST\`s to \`…/document-solicitation/{seller_id}\`, \`…/customers/{id}\` and
  \`…/confirm-migration-account/{uidb64}/{token}\` with an \`Idempotency-Key\` header: a new UUID per
  operation, the same on each of its attempts. The first request runs; a retry gets its answer
  again (status and body, with \`Idempotent-Replayed: true\`) and runs nothing. The same key with
  another path or body is \`422 idempotency_key_reused\`; while the first still runs,
  \`409 idempotency_key_in_use\` with \`Retry-After\`. Keys are kept 24 h per user (per link on the
  confirmation). A \`500\` or \`503\` is not kept: nothing was done, and the retry runs (one whose
  \`detail\` says the outcome is unknown may have been done: the retry with the key replays it);
- a refresh with the same spent token within 30 s of its rotation answers the same new
  refresh token, while that one is unused;
- \`429\` and \`503\` carry \`Retry-After\`: wait that long, then send the same request;
- \`…/customers/{id}\` is also an idempotent upsert under an id *you* choose (a UUID): the same
  body again changes nothing (changing a customer's \`tax_id\` is \`409 tax_id_immutable\`);
- deleting a bank account: a \`404\` to a retry after a lost \`204\` means it was done.

Any other \`POST\` without a key may have been done: read the state (a \`GET\`) before sending it again.

**The e-signature webhook** (\`POST /webhook/esign/{secret}/\`) is for the provider: the path secret
authenticates it and, when configured, \`Content-Hmac: sha256=<hex HMAC-SHA256 of the raw body>\` signs
the body (\`401 invalid_signature\` otherwise). Every accepted delivery is stored before the answer,
\`201 { "received": true, "duplicate": false }\`; a retried delivery with the same body is recognised
(\`duplicate: true\`) and changes nothing, so the provider may retry on any timeout or \`5xx\`. Events
for unknown envelopes are stored and answered \`201\` too, so retries stop.
`.trim()

export const documentInfo = {
  title: 'Receivables-advance platform API',
  // One version everywhere: package.json's, which the changelog and docs/versioning.md follow.
  version: packageJson.version,
  summary: 'Auth, company data, marketplace, registration and the e-signature webhook',
  description: GETTING_STARTED,
  contact: { name: 'Platform API support', email: 'api-support@platform.example' },
  license: { name: 'Proprietary: use under the partner agreement', identifier: 'LicenseRef-Proprietary' },
}

/** Absolute servers first: a generated client (openapi-typescript, hey-api) in Node needs a full URL. */
export const LOCAL_SERVER = 'http://localhost:3000'
export const GATEWAY_SERVER = 'https://{host}'
export const documentServers = [
  { url: LOCAL_SERVER, description: 'A local demo: `npm start`' },
  {
    url: GATEWAY_SERVER,
    description: 'The gateway publishing this API',
    variables: { host: { default: 'api.platform.example', description: "The gateway's host name" } },
  },
  { url: '/', description: "The host serving this document (in production: the gateway's public address)" },
]

export const BEARER_SCHEME = 'bearerAuth'

export const securitySchemes = {
  [BEARER_SCHEME]: {
    type: 'http' as const,
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'An access token from `POST /api/auth/v1/token` (or `/login`): send `{ "email", "password" }` there ' +
      '(demo: `alice@acme.example` / `Demo#2026!`) and paste the `access` value of the answer here. ' +
      'It is sent as `Authorization: Bearer <access>` and lives 5 minutes; renew it with ' +
      '`POST /api/auth/v1/token/refresh`.',
  },
}

export const documentTags = [
  { name: 'auth', description: 'Tokens (SimpleJWT-compatible): log in, refresh, public keys' },
  { name: 'company', description: 'Company data, KYC documents, bank accounts, customers, chat presence' },
  { name: 'marketplace', description: 'Titles and their documents' },
  { name: 'registration', description: 'Confirmation of accounts migrated from the old platform' },
  { name: 'webhooks', description: 'Inbound provider notifications' },
  { name: 'health', description: 'Liveness and readiness probes' },
]

import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import type autocannon from 'autocannon'
import { DEMO_PASSWORD } from '../db/seed/demo.js'
import { DEMO } from '../db/seed/ids.js'
import { BENCH_ENVELOPES, BENCH_SIGNERS, benchEnvelopeKey, createRefreshTokens, serviceTokenSigner } from './database.js'
import { BENCH_SECRETS } from './secrets.js'

/** What a scenario asks autocannon for; url, connections and duration come from the runner. */
export type LoadSpec = Pick<autocannon.Options, 'method' | 'headers' | 'body' | 'requests' | 'maxOverallRequests'> & { path: string }

export type ScenarioKind = 'read' | 'login' | 'refresh' | 'webhook' | 'write' | 'floor'

export interface ScenarioContext {
  baseUrl: string
  databaseUrl: string
  /** Requests the measurement plus its warm-up could need at most (sizes the refresh-token pool). */
  requestBudget: number
}

export interface Scenario {
  id: string
  /** The route's number in the README (empty for the floor). */
  route: string
  label: string
  kind: ScenarioKind
  /** Prepares data, then gives the load for each phase (warm-up, measurement); phases share state. */
  prepare(context: ScenarioContext): Promise<() => LoadSpec>
}

const json = { 'content-type': 'application/json' }

/** An access token from route 1 of the running service (the demo users all share one password). */
export async function accessToken(baseUrl: string, email: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/auth/v1/token`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ email, password: DEMO_PASSWORD }),
  })
  if (!response.ok) throw new Error(`login of ${email} failed: ${response.status} ${await response.text()}`)
  return ((await response.json()) as { access: string }).access
}

/** Fails fast, with the body, when a route does not answer 2xx before it is loaded. */
async function assertAnswers(baseUrl: string, spec: LoadSpec): Promise<void> {
  const response = await fetch(`${baseUrl}${spec.path}`, {
    method: spec.method ?? 'GET',
    headers: (spec.headers ?? {}) as Record<string, string>,
    ...(typeof spec.body === 'string' ? { body: spec.body } : {}),
  })
  const body = await response.text()
  if (!response.ok) throw new Error(`${spec.method ?? 'GET'} ${spec.path}: ${response.status} ${body}`)
}

const { roles, users, titles } = DEMO

/** An authenticated GET by one demo user, the same request every time. */
function readScenario(id: string, route: string, label: string, email: string, path: string): Scenario {
  return {
    id,
    route,
    label,
    kind: 'read',
    async prepare({ baseUrl }) {
      const spec: LoadSpec = { path, method: 'GET', headers: { authorization: `Bearer ${await accessToken(baseUrl, email)}` } }
      await assertAnswers(baseUrl, spec)
      return () => spec
    },
  }
}

export const READS: Scenario[] = [
  readScenario('r4', '4', 'GET get-user-companies (alice)', 'alice@acme.example', '/api/company/v1/get-user-companies'),
  readScenario(
    'r6',
    '6',
    'GET chat partner presence (bob)',
    'bob@beta.example',
    `/api/company/v1/${roles.betaBuyer}/chat/partners/${roles.acmeSeller}/presence`,
  ),
  readScenario(
    'r7',
    '7',
    'GET buyer check-documents (bob → Acme)',
    'bob@beta.example',
    `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}`,
  ),
  readScenario('r9', '9', 'GET title documents (bob, t1)', 'bob@beta.example', `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`),
]

/** Successful logins spread over the five active demo users (only failures count towards the throttle). */
const LOGIN_USERS = ['alice@acme.example', 'bob@beta.example', 'carol@gamma.example', 'dave@delta.example', 'erin@acme.example']

export function loginSpec(path: string): LoadSpec {
  return {
    path,
    requests: LOGIN_USERS.map((email) => ({ method: 'POST', path, headers: json, body: JSON.stringify({ email, password: DEMO_PASSWORD }) })),
  }
}

function loginScenario(id: string, route: string, label: string, path: string): Scenario {
  return {
    id,
    route,
    label,
    kind: 'login',
    async prepare({ baseUrl }) {
      const spec = loginSpec(path)
      await assertAnswers(baseUrl, { path, method: 'POST', headers: json, body: spec.requests![0]!.body as string })
      return () => spec
    },
  }
}

export const LOGINS: Scenario[] = [
  loginScenario('r1', '1', 'POST token (5 users)', '/api/auth/v1/token'),
  loginScenario('r2', '2', 'POST login (5 users)', '/api/auth/v1/login'),
]

/** Route 3: every request spends a fresh refresh token of its own family; never a replay. */
export const REFRESH: Scenario = {
  id: 'r3',
  route: '3',
  label: 'POST token/refresh (rotation)',
  kind: 'refresh',
  async prepare({ databaseUrl, requestBudget }) {
    const tokens = await createRefreshTokens(databaseUrl, requestBudget)
    let next = 0
    const path = '/api/auth/v1/token/refresh'
    return () => ({
      path,
      // Each connection stops when the pool is spent, so no request ever reuses a token.
      maxOverallRequests: Math.max(1, tokens.length - next),
      requests: [
        {
          method: 'POST',
          path,
          headers: json,
          setupRequest: (request) => ({ ...request, body: JSON.stringify({ refresh: tokens[next++ % tokens.length] }) }),
        },
      ],
    })
  },
}

/**
 * The seq-th new webhook body: a signature on envelope seq mod BENCH_ENVELOPES, by its first signer
 * on the first pass over the envelopes and its second on the next, so that each event finds its
 * signer pending and changes it (the bench database has enough envelopes for a whole run).
 */
const webhookBody = (seq: number): string =>
  JSON.stringify({
    event: {
      name: 'sign',
      occurred_at: new Date(Date.UTC(2026, 0, 1) + seq).toISOString(),
      data: { signer: { email: BENCH_SIGNERS[Math.floor(seq / BENCH_ENVELOPES) % BENCH_SIGNERS.length] }, sequence: seq },
    },
    document: { key: benchEnvelopeKey(seq % BENCH_ENVELOPES), status: 'running' },
  })

/** One delivery in four repeats an earlier body exactly (`duplicate: true`); the rest are new events. */
const DUPLICATE_EVERY = 4
const REPEATED_BODIES = 50
/** The next new body's number; kept across measurements (warm-up, rounds), so that no new body repeats an earlier one. */
let nextWebhookSeq = REPEATED_BODIES

export const WEBHOOK: Scenario = {
  id: 'r12',
  route: '12',
  label: 'POST esign webhook (25 % duplicates)',
  kind: 'webhook',
  async prepare({ baseUrl }) {
    const path = `/webhook/esign/${BENCH_SECRETS.ESIGN_WEBHOOK_SECRETS}/`
    const repeated = Array.from({ length: REPEATED_BODIES }, (_, n) => webhookBody(n))
    for (const body of repeated) await assertAnswers(baseUrl, { path, method: 'POST', headers: json, body })
    return () => ({
      path,
      requests: [
        {
          method: 'POST',
          path,
          headers: json,
          setupRequest: (request) => {
            nextWebhookSeq += 1
            const seq = nextWebhookSeq
            const body = seq % DUPLICATE_EVERY === 0 ? repeated[seq % REPEATED_BODIES]! : webhookBody(seq)
            return { ...request, body }
          },
        },
      ],
    })
  },
}

/** Floor (a), on bench/floor-server.ts: an access token of the service's format for alice, and her row by primary key. */
export const FLOOR: Scenario = {
  id: 'floor',
  route: '',
  label: 'floor (a): JWT + one PK query',
  kind: 'floor',
  async prepare({ baseUrl }) {
    // The floor reads no family: any end past the run.
    const token = (await serviceTokenSigner()).signAccess(users.alice, randomUUID(), new Date(Date.now() + 86_400_000)).token
    const spec: LoadSpec = { path: '/floor', method: 'GET', headers: { authorization: `Bearer ${token}` } }
    await assertAnswers(baseUrl, spec)
    return () => spec
  },
}

/**
 * Routes 5 and 11 with and without `Idempotency-Key` (`bench:compare -- --scenario r11,r11k,r11r`):
 * the same request without a key, with a new key each time (claim, run, keep the answer) and with
 * one key again and again (a replay). Route 11 saves one of a few customers with their own body, so
 * every run without a key is an unchanged upsert; route 5's solicitation exists after its first
 * request, so its runs without a key (and with new keys) are `409 solicitation_already_open`.
 */
type KeyUse = 'none' | 'new' | 'same'

function keyedHeaders(token: string, use: KeyUse, sameKey: string): Record<string, string> {
  const headers: Record<string, string> = { ...json, authorization: `Bearer ${token}` }
  if (use === 'same') headers['idempotency-key'] = sameKey
  return headers
}

function keyedScenario(id: string, route: '5' | '11', use: KeyUse): Scenario {
  const what = { none: 'no key', new: 'a new key each', same: 'one key (replays)' }[use]
  return {
    id,
    route,
    label: route === '5' ? `POST document-solicitation (bob → Acme), ${what}` : `POST customers (alice, 4 ids), ${what}`,
    kind: 'write',
    async prepare({ baseUrl }) {
      const email = route === '5' ? 'bob@beta.example' : 'alice@acme.example'
      const token = await accessToken(baseUrl, email)
      const sameKey = randomUUID()
      const all =
        route === '5'
          ? [
              {
                path: `/api/company/v1/${roles.betaBuyer}/document-solicitation/${roles.acmeSeller}`,
                body: JSON.stringify({ document_types: ['balance_sheet'] }),
              },
            ]
          : Array.from({ length: 4 }, (_, n) => ({
              path: `/api/company/v1/${roles.acmeSeller}/customers/${BENCH_CUSTOMERS[n]}`,
              body: JSON.stringify({ name: `Bench Customer ${n}`, tax_id: BENCH_CUSTOMER_TAX_IDS[n] }),
            }))
      // One key goes with one request: another path with it would be 422.
      const bodies = use === 'same' ? all.slice(0, 1) : all
      const headers = keyedHeaders(token, use, sameKey)
      // Creates the solicitation or the customers (and the key's answer) before the measurement.
      for (const { path, body } of bodies) await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body }).then((response) => response.text())
      if (route === '11') await assertAnswers(baseUrl, { path: bodies[0]!.path, method: 'POST', headers, body: bodies[0]!.body })
      let next = 0
      return () => ({
        path: bodies[0]!.path,
        requests: [
          {
            method: 'POST',
            path: bodies[0]!.path,
            headers,
            setupRequest: (request) => {
              const { path, body } = bodies[next++ % bodies.length]!
              const keyed = use === 'new' ? { ...headers, 'idempotency-key': randomUUID() } : headers
              return { ...request, path, body, headers: keyed }
            },
          },
        ],
      })
    },
  }
}

const BENCH_CUSTOMERS = [
  '7b000000-0000-4000-8000-000000000001',
  '7b000000-0000-4000-8000-000000000002',
  '7b000000-0000-4000-8000-000000000003',
  '7b000000-0000-4000-8000-000000000004',
]
/** Valid CNPJs of their own (the demo customers hold others). */
const BENCH_CUSTOMER_TAX_IDS = ['11444777000161', '11222333000262', '98765432100060', '12ABC34501DE35']

export const KEYED_WRITES: Scenario[] = [
  keyedScenario('r5', '5', 'none'),
  keyedScenario('r5k', '5', 'new'),
  keyedScenario('r5r', '5', 'same'),
  keyedScenario('r11', '11', 'none'),
  keyedScenario('r11k', '11', 'new'),
  keyedScenario('r11r', '11', 'same'),
]

/**
 * Route 4 with a forged access token of the service's shape for alice, signed with a key the
 * service does not hold: every answer is `401` (non-2xx by design), and the cost measured is the
 * token check's. `x4`: no `kid`, as a token from before key ids, tried with every key until
 * JWT_KID_CUTOVER's window has passed; `x4k`: an unknown `kid`, tried with none. Compare a service
 * with many `JWT_SIGNING_KEY_FALLBACKS` against one with none (bench/README.md, "Forged tokens").
 */
function forgedScenario(id: string, label: string, header: Record<string, string>): Scenario {
  return {
    id,
    route: '4',
    label,
    kind: 'read',
    async prepare({ baseUrl }) {
      const now = Math.floor(Date.now() / 1000)
      const claims = {
        token_type: 'access',
        exp: now + 3_600,
        iat: now,
        jti: randomBytes(16).toString('hex'),
        user_id: users.alice,
        fid: randomUUID(),
      }
      const unsigned = [header, claims].map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.')
      const signature = createHmac('sha256', randomBytes(32)).update(unsigned).digest('base64url')
      const spec: LoadSpec = {
        path: '/api/company/v1/get-user-companies',
        method: 'GET',
        headers: { authorization: `Bearer ${unsigned}.${signature}` },
      }
      const response = await fetch(`${baseUrl}${spec.path}`, { headers: spec.headers as Record<string, string> })
      if (response.status !== 401) throw new Error(`${id}: a forged token answered ${response.status}, not 401`)
      return () => spec
    },
  }
}

export const FORGED_TOKENS: Scenario[] = [
  forgedScenario('x4', 'GET get-user-companies, forged token without kid (401)', { alg: 'HS256', typ: 'JWT' }),
  forgedScenario('x4k', 'GET get-user-companies, forged token with an unknown kid (401)', { alg: 'HS256', typ: 'JWT', kid: 'not-a-key-we-know' }),
]

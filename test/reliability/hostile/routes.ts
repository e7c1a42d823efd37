import fc from 'fast-check'
import { DEMO } from '../../../db/seed/ids.js'
import { DEMO_PASSWORD } from '../../helpers/app.js'
import {
  ABSENT,
  anyText,
  brokenBody,
  changePath,
  choiceSegment,
  contentType,
  extraHeaders,
  field,
  hostileSegment,
  hostileText,
  objectBody,
  otherMethod,
  pathChange,
  shapedBody,
  uuidSegment,
  wrongType,
  type PathChange,
  type Segment,
} from './arbitraries.js'
import type { DeclaredRoute } from '../../../src/tenancy/plugin.js'
import { KYC_TYPES } from '../../../src/vocabulary.js'
import { exampleBody, exampleParams, operationOf, routeName } from '../../helpers/declared-routes.js'
import { PASSWORD_MARK, USER_KEYS, type UserKey } from './session.js'

/** One generated request; `@@…@@` placeholders are filled in when it is sent (see session.ts). */
export interface FuzzRequest {
  /** The route it aims at, for the coverage count: `route 11`, `platform`, `unknown path`. */
  label: string
  /** The operation whose documented success statuses apply (`POST /api/…/{id}`), when the route matches. */
  operation: string | undefined
  method: string
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
  /** Could be accepted: the right method and path, well-formed ids, valid credentials. Else a 2xx is a bug. */
  mayPass: boolean
  /** Reaches the operation (right method, path intact): every answer must be one it documents. */
  matches: boolean
}

const BODY_LIMIT = 16 * 1024
const WEBHOOK_BODY_LIMIT = 1024 * 1024

const roles = Object.values(DEMO.roles)
const MEMBERSHIPS: [UserKey, string][] = [
  ['alice', DEMO.roles.acmeSeller],
  ['bob', DEMO.roles.betaBuyer],
  ['carol', DEMO.roles.gammaSeller],
  ['dave', DEMO.roles.deltaSeller],
  ['dave', DEMO.roles.deltaBuyer],
  ['erin', DEMO.roles.acmeSeller],
]

// ---------------------------------------------------------------- credentials

interface Auth {
  header: string | undefined
  valid: boolean
}

const TOKEN_MUTATIONS = ['cut', 'flip', 'nosig', 'none', 'resign', 'payload', 'double', 'lower'] as const

const mutatedToken = (name: string) =>
  fc.tuple(fc.constantFrom(...TOKEN_MUTATIONS), fc.nat(400)).map(([mutation, n]) => `@@${name}~${mutation}:${n}@@`)

/** The user's access token, in every spelling the service must take. */
const validSchemes = (user: UserKey): string[] => [
  `Bearer @@access.${user}@@`,
  `bearer @@access.${user}@@`,
  `BEARER @@access.${user}@@`,
  `  Bearer \t@@access.${user}@@  `,
]

const validBearer = (user: UserKey) => fc.constantFrom(...validSchemes(user))

const invalidAuthorization: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constantFrom(
    undefined,
    '',
    ' ',
    'Bearer',
    'Bearer ',
    'Basic dXNlcjpEZW1vIzIwMjYh',
    'Token @@access.alice@@',
    '@@access.alice@@',
    'Bearer @@refresh.alice@@',
    'Bearer @@access.bob@@ extra',
    'Bearer @@access.bob@@,Bearer @@access.alice@@',
    'Bearer null',
    'Bearer undefined',
    'Bearer eyJhbGciOiJub25lIn0.eyJ1c2VyX2lkIjoiMSJ9.',
    'Bearer a.b.c',
    'Bearer ...',
    'Negotiate abc',
  ),
  fc
    .constantFrom(...USER_KEYS)
    .chain((user) => mutatedToken(`access.${user}`))
    .map((token) => `Bearer ${token}`),
  fc.string({ unit: 'grapheme-ascii', maxLength: 60 }).map((text) => `Bearer ${text}`),
  fc.string({ unit: 'grapheme-ascii', maxLength: 60 }),
  fc.constantFrom(1000, 9000).map((length) => `Bearer eyJ${'A'.repeat(length)}`),
)

/** The acting user and the company role in the path, usually a membership of that user. */
const actor = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...MEMBERSHIPS) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...USER_KEYS), fc.constantFrom(...roles)) },
)

function bearerAuth(user: UserKey): fc.Arbitrary<Auth> {
  return fc.oneof(
    { weight: 5, arbitrary: validBearer(user).map((header): Auth => ({ header, valid: true })) },
    { weight: 2, arbitrary: invalidAuthorization.map((header): Auth => ({ header, valid: false })) },
  )
}

/** Public routes ignore credentials; send some anyway, good and bad. */
const anyAuth: fc.Arbitrary<Auth> = fc
  .oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom(...USER_KEYS).chain(validBearer) },
    { weight: 1, arbitrary: invalidAuthorization },
  )
  .map((header) => ({ header, valid: true }))

// ---------------------------------------------------------------- assembling a request

interface RouteShape {
  label: string
  method: 'GET' | 'POST' | 'DELETE'
  /** The OpenAPI path, `{name}` for each segment. */
  template: string
  segments: Record<string, fc.Arbitrary<Segment>>
  /** JSON bodies of the route's shape (the route has a body when given). */
  body?: fc.Arbitrary<string>
  bodyLimit?: number
  /** Extra headers of the route (Content-Hmac) and whether they are right. */
  headers?: fc.Arbitrary<{ headers: Record<string, string>; valid: boolean }>
}

interface Parts {
  method: string
  segments: Record<string, Segment>
  change: PathChange
  auth: Auth
  contentType: string | undefined
  payload: string | Buffer | undefined
  extra: Record<string, string>
  routeHeaders: { headers: Record<string, string>; valid: boolean }
}

function bodyFor(shape: RouteShape): fc.Arbitrary<string | Buffer | undefined> {
  const limit = shape.bodyLimit ?? BODY_LIMIT
  if (!shape.body) {
    // Bodies sent where none is expected.
    return fc.option(fc.oneof(objectBody({ name: anyText }), brokenBody(limit)), { freq: 4, nil: undefined })
  }
  return fc.oneof(
    { weight: 12, arbitrary: shape.body },
    { weight: 2, arbitrary: brokenBody(limit) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  )
}

function assemble(shape: RouteShape, parts: Parts): FuzzRequest {
  let path = shape.template
  for (const [name, segment] of Object.entries(parts.segments)) path = path.replace(`{${name}}`, segment.raw)
  const { url, keeps } = changePath(path, parts.change)
  const headers: Record<string, string> = { ...parts.extra, ...parts.routeHeaders.headers }
  if (parts.auth.header !== undefined) headers.authorization = parts.auth.header
  if (parts.contentType !== undefined) headers['content-type'] = parts.contentType
  const methodFits = parts.method === shape.method || (shape.method === 'GET' && parts.method === 'HEAD')
  return {
    label: shape.label,
    operation: `${shape.method} ${shape.template.replace(/(.)\/$/, '$1')}`,
    method: parts.method,
    url,
    headers,
    ...(parts.payload === undefined ? {} : { payload: parts.payload }),
    mayPass:
      methodFits &&
      keeps !== false &&
      parts.auth.valid &&
      parts.routeHeaders.valid &&
      Object.values(parts.segments).every((segment) => segment.valid),
    // A `.` or `..` segment is resolved away by the URL parser: the path then names another route.
    matches: methodFits && keeps === true && !Object.values(parts.segments).some((segment) => isDotSegment(segment.raw)),
  }
}

function isDotSegment(raw: string): boolean {
  try {
    return ['.', '..'].includes(decodeURIComponent(raw))
  } catch {
    return false
  }
}

const noHeaders = fc.constant({ headers: {}, valid: true })

function requestsFor(shape: RouteShape, auth: (user: UserKey) => fc.Arbitrary<Auth>, user: fc.Arbitrary<UserKey>): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      method: fc.oneof({ weight: 12, arbitrary: fc.constant<string>(shape.method) }, { weight: 1, arbitrary: otherMethod }),
      segments: fc.record(shape.segments),
      change: pathChange,
      auth: user.chain(auth),
      contentType,
      payload: bodyFor(shape),
      extra: extraHeaders,
      routeHeaders: shape.headers ?? noHeaders,
    })
    .map((parts) => assemble(shape, parts))
}

/** A bearer route acting for `{company_role_id}`: the token's user and the role come from one actor. */
function companyRoleRequests(shape: RouteShape): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      actor,
      roleSlot: fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: uuidSegment(roles) }),
      method: fc.oneof({ weight: 12, arbitrary: fc.constant<string>(shape.method) }, { weight: 1, arbitrary: otherMethod }),
      segments: fc.record(shape.segments),
      change: pathChange,
      authKind: fc.oneof({ weight: 5, arbitrary: fc.constant('valid' as const) }, { weight: 2, arbitrary: invalidAuthorization }),
      scheme: fc.nat(3),
      contentType,
      payload: bodyFor(shape),
      extra: extraHeaders,
    })
    .map(({ actor: [user, role], roleSlot, authKind, scheme, ...parts }) => {
      const auth: Auth = authKind === 'valid' ? { header: validSchemes(user)[scheme], valid: true } : { header: authKind, valid: false }
      const segments = { ...parts.segments, company_role_id: roleSlot ?? { raw: role, valid: true } }
      return assemble(shape, { ...parts, segments, auth, routeHeaders: { headers: {}, valid: true } })
    })
}

// ---------------------------------------------------------------- field values

const passwordUnit = fc.oneof(
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }),
  hostileText.filter((text) => text.length === 1),
)
const generatedPassword = fc.string({ unit: passwordUnit, minLength: 5, maxLength: 40 }).map((text) => `${PASSWORD_MARK}${text}`)

const credentials = shapedBody({
  email: fc.constantFrom(
    'alice@acme.example',
    ' Alice@ACME.example ',
    'bob@beta.example',
    'frank@acme.example',
    'maria@legacy.example',
    'lucas@legacy.example',
    'nobody@nowhere.example',
    'a@b.co',
    `${'x'.repeat(245)}@a.io`,
    'alice@acme.example\u0000',
    'álice@acme.example',
    'alice@acme.example ',
    'ALICE@ACME.EXAMPLE',
  ),
  password: fc.oneof({ weight: 2, arbitrary: fc.constant(DEMO_PASSWORD) }, { weight: 3, arbitrary: generatedPassword }),
})

const refreshBody = shapedBody({
  refresh: fc.oneof(
    { weight: 4, arbitrary: fc.constant('@@rotation.current@@') },
    { weight: 1, arbitrary: fc.constant('@@rotation.spent@@') },
    { weight: 2, arbitrary: mutatedToken('rotation.current') },
    { weight: 1, arbitrary: fc.constantFrom('@@access.alice@@', '@@access.bob~resign:0@@', 'eyJhbGciOiJIUzI1NiJ9.e30.', 'x.y.z') },
  ),
})

const dayOffset = (days: number): string => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)

const solicitationBody = objectBody({
  document_types: fc.oneof(
    { weight: 4, arbitrary: fc.constant(ABSENT) },
    { weight: 4, arbitrary: fc.uniqueArray(fc.constantFrom(...KYC_TYPES), { minLength: 1 }) },
    { weight: 2, arbitrary: fc.constantFrom([], ['cnpj_card', 'cnpj_card'], ['passport'], [null], 'cnpj_card', ['CNPJ_CARD'], [1]) },
    { weight: 1, arbitrary: fc.array(anyText, { maxLength: 3 }) },
    { weight: 1, arbitrary: wrongType },
  ),
  message: fc.oneof(
    { weight: 3, arbitrary: fc.constant(ABSENT) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 3, arbitrary: anyText },
    { weight: 1, arbitrary: wrongType },
  ),
  due_date: fc.oneof(
    { weight: 3, arbitrary: fc.constant(ABSENT) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 3, arbitrary: fc.integer({ min: -400, max: 4000 }).map(dayOffset) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '2026-02-30',
        '2028-02-29',
        '0000-01-01',
        '9999-12-31',
        '+002030-01-01',
        '2030-1-1',
        '2030-01-01T00:00:00Z',
        'tomorrow',
        '',
        '2030-13-01',
        '20300101',
        '2030-01-01\u0000',
      ),
    },
    { weight: 1, arbitrary: anyText },
    { weight: 1, arbitrary: wrongType },
  ),
})

const confirmationBody = objectBody({
  password: fc.oneof(
    { weight: 3, arbitrary: fc.constant(ABSENT) },
    { weight: 3, arbitrary: generatedPassword },
    { weight: 1, arbitrary: fc.constantFrom('short', `${PASSWORD_MARK}${'p'.repeat(1100)}`, `${PASSWORD_MARK}\u0000\u0000\u0000\u0000\u0000`) },
    { weight: 1, arbitrary: anyText },
    { weight: 1, arbitrary: wrongType },
  ),
})

const VALID_TAX_IDS = [
  '52998224725',
  '529.982.247-25',
  '11144477735',
  '12345678909',
  '11222333000181',
  '11.222.333/0001-81',
  '45678912000155',
  '12ABC34501DE35',
  '12.ABC.345/01DE-35',
  '12abc34501de35',
  ' 52998224725 ',
]
const INVALID_TAX_IDS = [
  '00000000000',
  '11111111111',
  '12345678900',
  '1122233300018',
  '１１２２２３３３０００１８１',
  '112223330001810',
  '52998224725\u0000',
]

const customerName = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('Cliente Exemplo Ltda', 'José da Silva', '  Padded  ', 'A'.repeat(200), 'Ação & Cia. 😀', 'عميل') },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }) },
  { weight: 1, arbitrary: hostileText },
)

const customerBody = fc.oneof(
  shapedBody({
    name: customerName,
    tax_id: fc.constantFrom(...VALID_TAX_IDS),
    email: fc.constantFrom(ABSENT, null, 'financeiro@cliente.example', ' Pay@Cliente.Example '),
    phone: fc.constantFrom(ABSENT, null, '+5511987654321', '+55 (11) 98765-4321'),
  }),
  objectBody({
    name: field(fc.constantFrom('A'.repeat(201), '', ' ', '\u0000')),
    tax_id: field(fc.oneof(fc.constantFrom(...INVALID_TAX_IDS), hostileText)),
    email: field(fc.constantFrom('no-at-sign', `${'a'.repeat(250)}@b.io`, 'a@b', 'ü@ü.example', 'a@b.c\u0000')),
    phone: field(fc.constantFrom('11987654321', '+', '+1', '+'.concat('9'.repeat(40)), '+55١١٩٨٧٦٥٤٣٢١', '+55\u000011')),
  }),
)

const EVENT_NAMES = ['sign', 'refusal', 'close', 'auto_close', 'document_closed', 'cancel', 'deadline', 'viewed']

const timestamp = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.date({ min: new Date('1970-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((date) => date.toISOString()),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '2016-12-31T23:59:60Z',
      '2026-06-30T23:59:60.5Z',
      '2026-01-01T00:59:60+01:00',
      '2026-01-01T10:00:00+14:00',
      '2026-01-01t10:00:00z',
      '2026-01-01 10:00:00Z',
      '0000-01-01T00:00:00Z',
      '9999-12-31T23:59:59.999999999Z',
      '2026-02-30T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T10:00:00',
      '2026-01-01',
      '1e12',
      'yesterday',
      '2026-01-01T10:00:00.123456789012345678901234567890Z',
      '-000001-01-01T00:00:00Z',
      '2026-01-01T10:00:00-23:59',
    ),
  },
  { weight: 1, arbitrary: anyText },
)

const eventData = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom('alice@acme.example', 'BOB@beta.example', 'nobody@x.example').map((email) => ({ signer: { email, name: 'Signer' } })),
  },
  { weight: 1, arbitrary: fc.constantFrom('alice@acme.example', 'bob@beta.example').map((email) => ({ signer_email: email })) },
  { weight: 1, arbitrary: anyText.map((email) => ({ signer: { email } })) },
  // Replaced by nested arrays once serialised (see notification): too deep for JSON.stringify.
  { weight: 1, arbitrary: fc.constantFrom(1000, 100_000).map((depth) => ({ deep: `@deep:${depth}@` })) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constant(ABSENT) },
)

const notification = fc
  .record({
    event: fc.oneof(
      {
        weight: 8,
        arbitrary: shapedBody({ name: fc.constantFrom(...EVENT_NAMES), occurred_at: timestamp, data: eventData }).map(
          (text) => JSON.parse(text) as unknown,
        ),
      },
      { weight: 1, arbitrary: wrongType },
      { weight: 1, arbitrary: fc.constant(ABSENT) },
    ),
    document: fc.oneof(
      {
        weight: 8,
        arbitrary: shapedBody({
          key: fc.oneof(fc.constantFrom('demo-envelope-0001', 'demo-envelope-0002'), fc.uuid(), fc.constant('k'.repeat(201))),
          status: fc.oneof(fc.constant(ABSENT), fc.constantFrom('running', 'closed'), anyText, wrongType),
        }).map((text) => JSON.parse(text) as unknown),
      },
      { weight: 1, arbitrary: wrongType },
      { weight: 1, arbitrary: fc.constant(ABSENT) },
    ),
    padding: fc.oneof(
      { weight: 12, arbitrary: fc.constant(ABSENT) },
      // Near the 1 MiB webhook limit, under and over.
      { weight: 1, arbitrary: fc.constantFrom(1000, WEBHOOK_BODY_LIMIT - 400, WEBHOOK_BODY_LIMIT + 1).map((length) => 'p'.repeat(length)) },
    ),
  })
  .map((body) =>
    JSON.stringify(Object.fromEntries(Object.entries(body).filter(([, value]) => value !== ABSENT))).replace(
      /"@deep:(\d+)@"/g,
      (_match, depth: string) => `${'['.repeat(Number(depth))}${']'.repeat(Number(depth))}`,
    ),
  )

const contentHmac: fc.Arbitrary<{ headers: Record<string, string>; valid: boolean }> = fc.oneof(
  { weight: 10, arbitrary: fc.constant({ headers: { 'content-hmac': '@@hmac@@' }, valid: true }) },
  {
    weight: 3,
    arbitrary: fc
      .oneof(
        fc.constantFrom(
          undefined,
          '@@hmac.wrong@@',
          'sha256=',
          'sha256=zz',
          `sha256=${'0'.repeat(64)}`,
          `SHA256=${'a'.repeat(64)}`,
          `md5=${'a'.repeat(32)}`,
          'sha256=@@secret@@',
        ),
        fc.string({ unit: 'grapheme-ascii', maxLength: 80 }),
      )
      .map((value) => ({ headers: value === undefined ? {} : ({ 'content-hmac': value } as Record<string, string>), valid: false })),
  },
)

// ---------------------------------------------------------------- the routes

const everyUser = fc.constantFrom(...USER_KEYS)
const uuidOf = (ids: Record<string, string>) => uuidSegment(Object.values(ids))

export const authRequests = fc.oneof(
  requestsFor({ label: 'route 1', method: 'POST', template: '/api/auth/v1/token', segments: {}, body: credentials }, () => anyAuth, everyUser),
  requestsFor({ label: 'route 2', method: 'POST', template: '/api/auth/v1/login', segments: {}, body: credentials }, () => anyAuth, everyUser),
  requestsFor(
    { label: 'route 3', method: 'POST', template: '/api/auth/v1/token/refresh', segments: {}, body: refreshBody },
    () => anyAuth,
    everyUser,
  ),
  requestsFor({ label: 'route 4', method: 'GET', template: '/api/company/v1/get-user-companies', segments: {} }, bearerAuth, everyUser),
)

/** The routes 5–8 and 11 with arbitraries tuned to them; route 9 is among otherRequests. */
const TUNED_COMPANY_SHAPES: RouteShape[] = [
  {
    label: 'route 5',
    method: 'POST',
    template: '/api/company/{version}/{company_role_id}/document-solicitation/{seller_id}',
    segments: { version: choiceSegment(['v1'], ['v2', 'V1', 'v1.0', 'v0', 'latest']), seller_id: uuidOf(DEMO.roles) },
    body: solicitationBody,
  },
  {
    label: 'route 6',
    method: 'GET',
    template: '/api/company/v1/{company_role_id}/chat/partners/{partner_company_role_id}/presence',
    segments: { partner_company_role_id: uuidOf(DEMO.roles) },
  },
  {
    label: 'route 7',
    method: 'GET',
    template: '/api/company/v1/{company_role_id}/buyer/check-documents/{seller_id}',
    segments: { seller_id: uuidOf(DEMO.roles) },
  },
  {
    label: 'route 8',
    method: 'DELETE',
    template: '/api/company/v1/{company_role_id}/bank-account/{bank_account_id}',
    segments: { bank_account_id: uuidOf(DEMO.bankAccounts) },
  },
  {
    label: 'route 11',
    method: 'POST',
    template: '/api/company/v1/{company_role_id}/customers/{id}',
    // Mostly new ids: a customer is created under the id the client chooses.
    segments: { id: uuidSegment(Object.values(DEMO.customers), 8) },
    body: customerBody,
  },
]

/** Operations with arbitraries of their own elsewhere in this file (routes 4 and 9). */
const TUNED_ELSEWHERE = new Set(['GET /api/company/v1/get-user-companies', 'GET /api/v1/marketplace/{company_role_id}/title/{title_id}/documents'])

const EVERY_DEMO_ID = Object.values(DEMO).flatMap((ids) => Object.values(ids))

/**
 * A declared route nobody tuned arbitraries for, from its schema: each path parameter its
 * examples (or any demo id) beside hostile ones, the body its examples beside hostile fields.
 */
function declaredShape(route: DeclaredRoute): RouteShape {
  const example = exampleParams(route)
  const segments = Object.fromEntries(
    Object.entries(example)
      .filter(([name]) => name !== 'company_role_id')
      .map(([name, value]) => [name, /^[0-9a-f-]{36}$/.test(value) ? uuidSegment([value, ...EVERY_DEMO_ID]) : choiceSegment([value])]),
  )
  const body = exampleBody(route)
  return {
    label: routeName(route),
    method: route.method as RouteShape['method'],
    template: operationOf(route).slice(route.method.length + 1),
    segments,
    ...(body === undefined
      ? {}
      : {
          body: fc.oneof(
            fc.constant(JSON.stringify(body)),
            objectBody(
              Object.fromEntries(Object.keys(body as object).map((name) => [name, field(fc.constant((body as Record<string, unknown>)[name]))])),
            ),
          ),
        }),
  }
}

/**
 * The company-role routes 5–8 and 11, and every other route the app declares (its registry, so a
 * new route is fuzzed without editing this file), with their labels.
 */
export function companyRequestsOf(routes: readonly DeclaredRoute[]): { requests: fc.Arbitrary<FuzzRequest>; labels: string[] } {
  const tuned = new Set(TUNED_COMPANY_SHAPES.map((shape) => `${shape.method} ${shape.template}`))
  const declared = routes.filter((route) => !tuned.has(operationOf(route)) && !TUNED_ELSEWHERE.has(operationOf(route)))
  const generated = declared.map((route) =>
    route.tenancy.kind === 'company' ? companyRoleRequests(declaredShape(route)) : requestsFor(declaredShape(route), bearerAuth, everyUser),
  )
  return {
    requests: fc.oneof(...TUNED_COMPANY_SHAPES.map(companyRoleRequests), ...generated),
    labels: [...TUNED_COMPANY_SHAPES.map((shape) => shape.label), ...declared.map(routeName)],
  }
}

export const otherRequests = fc.oneof(
  companyRoleRequests({
    label: 'route 9',
    method: 'GET',
    template: '/api/v1/marketplace/{company_role_id}/title/{title_id}/documents',
    segments: { title_id: uuidOf(DEMO.titles) },
  }),
  requestsFor(
    {
      label: 'route 10',
      method: 'POST',
      template: '/api/registration/v1/confirm-migration-account/{uidb64}/{token}',
      segments: {
        uidb64: fc.oneof(
          { weight: 4, arbitrary: fc.constant({ raw: '@@link.uid@@', valid: true }) },
          // maria's legacy id and her UUID name her as well as the link's own uidb64 does.
          {
            weight: 1,
            arbitrary: fc.constantFrom('1042', DEMO.users.maria).map((uid) => ({ raw: Buffer.from(uid).toString('base64url'), valid: true })),
          },
          {
            weight: 2,
            arbitrary: fc
              .oneof(
                fc.constantFrom('1043', '99999999999999999999', '-1', '0', '1e3', '2147483648', 'urn:uuid:10000000-0000-4000-8000-000000000007'),
                fc
                  .bigInt({ min: -(2n ** 70n), max: 2n ** 70n })
                  .filter((id) => id !== 1042n)
                  .map(String),
                hostileText,
              )
              .map((text) => ({ raw: Buffer.from(text).toString('base64url'), valid: false })),
          },
          { weight: 1, arbitrary: hostileSegment.map((raw) => ({ raw, valid: false })) },
        ),
        token: fc.oneof(
          { weight: 4, arbitrary: fc.constant({ raw: '@@link.token@@', valid: true }) },
          { weight: 1, arbitrary: mutatedToken('link.token').map((raw) => ({ raw, valid: false })) },
          {
            weight: 1,
            arbitrary: fc
              .constantFrom('zzzzzzzzzzzzzz-abc', '0-0', '-', 'abc', `1-${'f'.repeat(64)}`, 'ZZZ-abc')
              .map((raw) => ({ raw, valid: false })),
          },
          { weight: 1, arbitrary: hostileSegment.map((raw) => ({ raw, valid: false })) },
        ),
      },
      body: confirmationBody,
    },
    () => anyAuth,
    everyUser,
  ),
  requestsFor(
    {
      label: 'route 12',
      method: 'POST',
      template: '/webhook/esign/{secret}/',
      segments: {
        secret: fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom({ raw: '@@secret@@', valid: true }, { raw: '@@secret.old@@', valid: true }) },
          {
            weight: 2,
            arbitrary: fc
              .constantFrom(
                'demo-esign-secret',
                'fuzz-webhook-secret-93c1e7a4b2',
                '@@secret@@x',
                'Fuzz-Webhook-Secret',
                '@@secret@@%00',
                '%40%40secret%40%40',
              )
              .map((raw) => ({ raw, valid: false })),
          },
          { weight: 1, arbitrary: hostileSegment.map((raw) => ({ raw, valid: false })) },
        ),
      },
      body: notification,
      bodyLimit: WEBHOOK_BODY_LIMIT,
      headers: contentHmac,
    },
    () => anyAuth,
    everyUser,
  ),
)

// ---------------------------------------------------------------- health, docs, JWKS, unknown paths

const PLATFORM: [string, string | undefined][] = [
  ['/health/live', 'GET /health/live'],
  ['/health/ready', 'GET /health/ready'],
  ['/.well-known/jwks.json', 'GET /.well-known/jwks.json'],
  ['/docs', 'docs'],
  ['/docs/', 'docs'],
  ['/docs/json', 'docs'],
  ['/docs/yaml', 'docs'],
  ['/docs/static/index.html', 'docs'],
  ['/docs/static/swagger-ui.css', 'docs'],
  ['/docs/static/../../package.json', undefined],
  ['/docs/static/%2e%2e/%2e%2e/package.json', undefined],
  ['/docs/static/..%2f..%2fpackage.json', undefined],
]

const UNKNOWN_PATHS = [
  '/',
  '/api',
  '/api/',
  '/api/auth',
  '/api/auth/v1/tokens',
  '/api/auth/v2/token',
  '/api/company/v2/get-user-companies',
  '/webhook/esign',
  '/webhook/esign/',
  '/webhook/esign/@@secret@@/extra',
  '/Webhook/esign/@@secret@@/',
  '//webhook/esign/@@secret@@/',
  '/webhook//esign/@@secret@@/',
  '/webhook/esign//@@secret@@/',
  '/webhook/ESIGN/@@secret@@/',
  '/webhook/esign/x/@@secret@@',
  '/favicon.ico',
  '/.env',
  '/.git/config',
  '/api/../etc/passwd',
  '/%00',
  '/%ZZ',
  '/%',
  '/api/company/v1/%ZZ/customers/%ZZ',
  '/api/registration/v1/confirm-migration-account/@@link.uid@@',
  '/api/registration/v1/confirm-migration-account//@@link.token@@',
  '/health',
  '/health/',
  '/docs/nothing',
  `/${'a'.repeat(5000)}`,
  `/api/company/v1/${'b'.repeat(2000)}/customers/${'c'.repeat(2000)}`,
  '/webhook/esign/@@secret@@%ZZ/',
  '/api/v1/marketplace/@@access.alice@@/title/x/documents',
]

export const platformRequests: fc.Arbitrary<FuzzRequest> = fc
  .record({
    target: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...PLATFORM) },
      { weight: 3, arbitrary: fc.constantFrom(...UNKNOWN_PATHS).map((path): [string, string | undefined] => [path, undefined]) },
      { weight: 1, arbitrary: fc.webPath().map((path): [string, string | undefined] => [path || '/', undefined]) },
    ),
    method: fc.oneof({ weight: 4, arbitrary: fc.constant('GET') }, { weight: 1, arbitrary: otherMethod }),
    change: pathChange,
    auth: anyAuth,
    contentType,
    payload: fc.option(fc.oneof(objectBody({ name: anyText }), brokenBody(BODY_LIMIT)), { freq: 3, nil: undefined }),
    extra: extraHeaders,
  })
  .map(({ target: [path, operation], method, change, auth, contentType: type, payload, extra }): FuzzRequest => {
    const { url, keeps } = changePath(path, change)
    const headers: Record<string, string> = { ...extra }
    if (auth.header !== undefined) headers.authorization = auth.header
    if (type !== undefined) headers['content-type'] = type
    const known = operation !== undefined && (method === 'GET' || method === 'HEAD')
    return {
      label: operation === undefined ? 'unknown path' : operation === 'docs' ? 'docs' : operation,
      operation: known ? operation : undefined,
      method,
      url,
      headers,
      ...(payload === undefined ? {} : { payload }),
      mayPass: known && keeps !== false,
      matches: known && keeps === true && operation !== 'docs',
    }
  })

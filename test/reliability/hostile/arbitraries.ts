import fc from 'fast-check'

/**
 * Building blocks of hostile requests. Values that must be resolved when the request is sent (tokens,
 * the webhook secret, a confirmation link) are written as `@@name@@` placeholders (see session.ts),
 * so that a failing case prints readably and replays with the tokens of the replaying run.
 */

/** Characters that break naive code: NUL and other controls, lone surrogates, combining marks, RTL, emoji. */
const nastyChar = fc.constantFrom(
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\t',
  '\n',
  '\r',
  '\u2028',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\u0301',
  '\u0336',
  '\u200b',
  '\u200d',
  '\u202e',
  '\u2066',
  '\ufeff',
  '\ufffd',
  '\uffff',
  'ß',
  'İ',
  'ﬀ',
  'Ω',
  '😀',
  '👨‍👩‍👧',
  '🏳️‍🌈',
  '\u{10ffff}',
  '"',
  '\\',
  "'",
  '<',
  '%',
  '$',
  '{',
  '/',
  '.',
  ' ',
)

const unit = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: nastyChar },
)

/** Short strings made of every kind of character, the nasty ones over-represented. */
export const hostileText = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit, maxLength: 24 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      'null',
      'undefined',
      'true',
      '0',
      '-1',
      'NaN',
      '[object Object]',
      "'; DROP TABLE users; --",
      '" OR 1=1 --',
      '../../../etc/passwd',
      '${jndi:ldap://x}',
      '{{7*7}}',
      '<script>alert(1)</script>',
      '%00',
      '%s%n',
      'e\u0301\u0301\u0301',
      '\u202eevil.txt',
      'مرحبا بالعالم',
      'שלום',
      'a\u0000b',
      '\ud83d',
      '\ude00x',
      '💸💸💸',
    ),
  },
)

/** Long strings around the 16 KiB body limit (and the 2000/1024/200-character field limits). */
export const hugeText = fc
  .tuple(fc.constantFrom(201, 1025, 2001, 4096, 8000, 16_000, 16_385, 20_000), fc.constantFrom('x', 'é', '😀', '\u0000', 'a\u0301'))
  .map(([length, filler]) => filler.repeat(Math.ceil(length / filler.length)))

export const anyText = fc.oneof({ weight: 8, arbitrary: hostileText }, { weight: 1, arbitrary: hugeText })

/** Everything JSON can carry in the place of a value, strings excluded. */
export const wrongType = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -0, [], {}, [''], [null], { value: 'x' }, { $ne: null }, { $gt: '' }),
  fc.integer(),
  fc.double(),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(hostileText, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
)

/** A field: often a valid value, else something hostile, else absent. */
export function field<T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 4, arbitrary: valid },
    { weight: 1, arbitrary: anyText },
    { weight: 1, arbitrary: wrongType },
    { weight: 1, arbitrary: fc.constant(ABSENT) },
  )
}

/** Marks a property left out of a generated body. */
export const ABSENT = Symbol('absent')

const unknownProperties = fc.dictionary(
  fc.oneof(hostileText, fc.constantFrom('is_admin', 'role', 'user_id', 'id', 'status', 'company_role_id', 'permissions')),
  fc.jsonValue({ maxDepth: 3 }),
  { maxKeys: 3 },
)

/** A JSON object body built from per-field arbitraries, sometimes with unknown properties mixed in. */
export function objectBody(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<string> {
  return fc.tuple(fc.record(fields), fc.option(unknownProperties, { freq: 3 })).map(([known, extra]) => {
    const body: Record<string, unknown> = { ...(extra ?? {}) }
    for (const [name, value] of Object.entries(known)) if (value !== ABSENT) body[name] = value
    return JSON.stringify(body)
  })
}

/**
 * Bodies of a route's shape: half of them with every field valid (so that requests reach the
 * handler and succeed now and then), half with fields swapped for hostile values.
 */
export function shapedBody(valid: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<string> {
  const hostile = Object.fromEntries(Object.entries(valid).map(([name, arbitrary]) => [name, field(arbitrary)]))
  return fc.oneof(objectBody(valid), objectBody(hostile))
}

/** Bodies that are not an object of the right shape: broken JSON, other JSON values, oversized, binary. */
export function brokenBody(limit: number): fc.Arbitrary<string | Buffer> {
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
  return fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      '{',
      '}',
      '[',
      '{"',
      '{"a":}',
      '{"a":1,}',
      "{'a':'b'}",
      '{a:1}',
      'nul',
      'NaN',
      'Infinity',
      'undefined',
      'null',
      'true',
      '0',
      '-0',
      '1e999',
      '"text"',
      '[]',
      '[{}]',
      '{}{}',
      '{"a":1}garbage',
      '\ufeff{}',
      '\u0000',
      '{"__proto__":{"is_admin":true}}',
      '{"constructor":{"prototype":{"is_admin":true}}}',
      '{"a":"\\ud800"}',
      '{"a":"\\u0000"}',
      '{"a":"\\x41"}',
      '{"a":01}',
      '{"a":.5}',
      '{"a":+1}',
      '{"a":"b"\n\n',
    ),
    fc.constantFrom(100, 1000, 5000).map(nested),
    fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? 'null'),
    fc.string({ unit: 'binary', maxLength: 64 }),
    fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
    // Invalid UTF-8 inside a JSON string.
    fc.constant(Buffer.concat([Buffer.from('{"email":"'), Buffer.from([0xff, 0xfe, 0xc0, 0x80]), Buffer.from('"}')])),
    // Just over the limit, with a valid JSON shape.
    fc.constant(`{"padding":"${'x'.repeat(limit)}"}`),
  )
}

/** Content-Type values: mostly JSON (with parameters and odd casing), else every other kind. */
export const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant<string | undefined>('application/json') },
  {
    weight: 4,
    arbitrary: fc.constantFrom<string | undefined>(
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'APPLICATION/JSON',
      'Application/Json; Charset=utf-8',
      'application/json; charset=utf-16',
      'application/json; charset=latin1',
      'application/json;',
      'application/json; foo=bar',
      'application/json ; charset=utf-8',
      'application/json; charset="utf-8"',
    ),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom<string | undefined>(
      undefined,
      '',
      ' ',
      'text/plain',
      'text/plain; charset=utf-8',
      'text/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=----x',
      'application/xml',
      'application/octet-stream',
      'application/jsonx',
      'application/problem+json',
      'application/vnd.api+json',
      'application/json, text/plain',
      '*/*',
      'json',
      ';;;',
      'application/json; charset',
      'application/\u00e9json',
      'text/html; charset=utf-8',
    ),
  },
)

/** A path segment: its raw form in the URL and whether the route should accept it. */
export interface Segment {
  raw: string
  valid: boolean
}

const STRICT_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function decoded(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw)
  } catch {
    return undefined
  }
}

/** Segments that are not what any route expects: traversal, bad escapes, NUL, unicode, very long. */
export const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '0',
    '-1',
    'null',
    'undefined',
    'NaN',
    'true',
    '1e309',
    '%20',
    '%00',
    'a%00b',
    '%ZZ',
    '%',
    '%E0%A4%A',
    '%C0%AE',
    '..',
    '.',
    '%2e%2e',
    '..%2f..%2fetc%2fpasswd',
    '%2F',
    '%5C',
    '..%5c..%5cwindows',
    '~',
    '*',
    '%25',
    '%2525',
    '{}',
    '[]',
    '%7B%7D',
    'x;y=z',
    '@',
    ':',
    'a:b',
    '%0d%0aSet-Cookie:%20x=y',
    '%F0%9F%98%80',
    '%ED%A0%80',
    'me',
  ),
  // Through UTF-8 first: encodeURIComponent refuses lone surrogates (the constants above have one).
  hostileText.filter((text) => text.length > 0).map((text) => encodeURIComponent(Buffer.from(text).toString())),
  fc.constantFrom(37, 99, 100, 101, 512, 1024, 1025, 4000).map((length) => 'a'.repeat(length)),
  fc.webSegment().filter((segment) => segment.length > 0),
)

/** A UUID slot: known ids, random UUIDs (`fresh` weighs them), near-UUIDs and hostile segments. */
export function uuidSegment(known: readonly string[], fresh = 2): fc.Arbitrary<Segment> {
  const nearUuid = fc.tuple(fc.uuid(), fc.nat(11)).map(([uuid, variant]): string => {
    switch (variant) {
      case 0:
        return uuid.toUpperCase()
      case 1:
        return uuid.slice(0, -1)
      case 2:
        return `${uuid}a`
      case 3:
        return uuid.replace(/-/g, '')
      case 4:
        return encodeURIComponent(`{${uuid}}`)
      case 5:
        return `urn:uuid:${uuid}`
      case 6:
        return `${uuid.slice(0, 9)}g${uuid.slice(10)}`
      case 7:
        return `%20${uuid}`
      case 8:
        return `${uuid}%00`
      case 9:
        return `${uuid};x=1`
      case 10:
        return uuid.replace(/-/g, '%2D')
      default:
        return `${uuid}-${uuid.slice(0, 4)}`
    }
  })
  return fc
    .oneof(
      { weight: 8, arbitrary: fc.constantFrom(...known) },
      { weight: fresh, arbitrary: fc.uuid() },
      { weight: 2, arbitrary: nearUuid },
      { weight: 2, arbitrary: hostileSegment },
    )
    .map((raw) => ({ raw, valid: STRICT_UUID.test(decoded(raw) ?? '') }))
}

/** A segment that is valid only when it is one of `valid`. */
export function choiceSegment(valid: readonly string[], invalid: readonly string[] = []): fc.Arbitrary<Segment> {
  return fc
    .oneof(
      { weight: 8, arbitrary: fc.constantFrom(...valid) },
      { weight: 3, arbitrary: invalid.length > 0 ? fc.constantFrom(...invalid) : hostileSegment },
      { weight: 2, arbitrary: hostileSegment },
    )
    .map((raw) => ({ raw, valid: valid.includes(raw) }))
}

/**
 * What is done to the path after the route's segments are filled in. `keeps` says whether the
 * route still matches (a trailing slash and a query string do; case, extra slashes and segments do
 * not; dot segments are resolved by the injector's URL parser, so they may or may not).
 */
export interface PathChange {
  kind: 'none' | 'slash' | 'query' | 'slash+query' | 'double-slash' | 'upper' | 'extra' | 'dots' | 'dots-encoded' | 'fragment'
  query?: string
}

const queryString = fc.oneof(
  fc.constantFrom(
    'a=1',
    'format=json',
    'access_token=@@access.alice@@',
    'token=@@refresh.alice@@',
    'password=pw~QueryPass1234',
    'secret=@@secret@@',
    'company_role_id=30000000-0000-4000-8000-000000000002',
    '__proto__[x]=1',
    'a[]=1&a[]=2',
    '',
    '&&&',
    '=',
    'a=%ZZ',
    'a=%00',
    'x='.concat('y'.repeat(3000)),
  ),
  fc.webQueryParameters(),
)

export const pathChange: fc.Arbitrary<PathChange> = fc.oneof(
  { weight: 16, arbitrary: fc.constant<PathChange>({ kind: 'none' }) },
  { weight: 4, arbitrary: fc.constant<PathChange>({ kind: 'slash' }) },
  { weight: 3, arbitrary: queryString.map((query): PathChange => ({ kind: 'query', query })) },
  { weight: 1, arbitrary: queryString.map((query): PathChange => ({ kind: 'slash+query', query })) },
  {
    weight: 3,
    arbitrary: fc.constantFrom<PathChange>(
      { kind: 'double-slash' },
      { kind: 'upper' },
      { kind: 'extra' },
      { kind: 'dots' },
      { kind: 'dots-encoded' },
      { kind: 'fragment' },
    ),
  },
)

/** Applies a path change; returns the URL and whether the route can still match it. */
export function changePath(path: string, change: PathChange): { url: string; keeps: boolean | 'maybe' } {
  switch (change.kind) {
    case 'none':
      return { url: path, keeps: true }
    case 'slash':
      return { url: `${path}/`, keeps: true }
    case 'query':
      return { url: `${path}?${change.query ?? ''}`, keeps: true }
    case 'slash+query':
      return { url: `${path}/?${change.query ?? ''}`, keeps: true }
    case 'double-slash':
      return { url: path.replace('/', '//').replace(/\/([^/]*)$/, '//$1'), keeps: false }
    case 'upper':
      return { url: path.toUpperCase(), keeps: path === path.toUpperCase() }
    case 'extra':
      return { url: `${path}/extra`, keeps: false }
    case 'dots':
      return { url: path.replace(/\/([^/]+)$/, '/x/../$1'), keeps: 'maybe' }
    case 'dots-encoded':
      return { url: path.replace(/\/([^/]+)$/, '/x/%2e%2e/$1'), keeps: 'maybe' }
    case 'fragment':
      return { url: `${path}#frag`, keeps: 'maybe' }
  }
}

export const otherMethod = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS')

/** Headers a client may add, some of them hostile. */
export const extraHeaders: fc.Arbitrary<Record<string, string>> = fc
  .array(
    fc.oneof(
      fc.constantFrom<[string, string]>(
        ['x-request-id', 'gw-req-1'],
        ['x-request-id', 'bad id\n{"level":60}'],
        ['x-request-id', 'x'.repeat(300)],
        ['accept', 'text/html'],
        ['accept', 'application/xml'],
        ['accept', '*/*;q=0'],
        ['accept-encoding', 'gzip, br'],
        ['x-forwarded-for', '203.0.113.7, 10.0.0.1'],
        ['x-forwarded-for', 'not-an-ip'],
        ['content-encoding', 'gzip'],
        ['content-encoding', 'identity'],
        ['accept-version', '2.0.0'],
        ['x-http-method-override', 'DELETE'],
        ['cookie', 'session=@@access.bob@@'],
        ['origin', 'https://evil.example'],
        ['expect', '100-continue'],
      ),
      fc.tuple(fc.constantFrom('x-custom', 'x-debug', 'if-none-match', 'range'), fc.string({ unit: 'grapheme-ascii', maxLength: 40 })),
    ),
    { maxLength: 2 },
  )
  .map((pairs) => Object.fromEntries(pairs))

import type { DestinationStream, LoggerOptions } from 'pino'
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the handler did, for the request's one completion line (see RequestLogController); null when nothing. */
    logResult: Record<string, unknown> | null
    /** The `code` of the problem answered (src/plugins/errors.ts), for the completion line; null when none. */
    problemCode: string | null
  }
}

export type LogDestination = DestinationStream

const MASK = '[REDACTED]'

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

const ANCHORS = /webhook|confirm-migration-account/i

/**
 * Route 12's path ends in the sender's secret and route 10's in the confirmation token. Matched
 * loosely (any case, repeated slashes, missing or extra segments): a mistyped URL that reaches the
 * 404 handler carries the secret all the same. The webhook keeps its provider name, a well-formed
 * confirmation link its (not secret) uidb64; every other segment after the anchor is masked.
 */
function maskSecretSegments(path: string): string {
  // Most paths have neither anchor, even percent-decoded: skip the per-segment work (every request logs its URL).
  if (!path.includes('%') && !ANCHORS.test(path)) return path
  const segments = path.split('/')
  const names = segments.map((segment) => decoded(segment).toLowerCase())
  const webhook = names.indexOf('webhook')
  if (webhook !== -1) {
    return segments
      .map((segment, index) => (index <= webhook || segment === '' || (index === webhook + 1 && names[index] === 'esign') ? segment : MASK))
      .join('/')
  }
  const confirm = names.indexOf('confirm-migration-account')
  if (confirm !== -1) {
    const after = segments.slice(confirm + 1)
    const keepUid = (after.at(-1) === '' ? after.length - 1 : after.length) === 2
    return segments.map((segment, index) => (index <= confirm || segment === '' || (keepUid && index === confirm + 1) ? segment : MASK)).join('/')
  }
  return path
}

/** No route reads a query string, and clients put tokens and passwords there: values are never logged. */
const maskQuery = (query: string): string =>
  query
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=')
      if (equals === -1) return part === '' ? '' : MASK
      return `${part.slice(0, equals)}=${MASK}`
    })
    .join('&')

/**
 * Tokens wherever a client put them in the path, even where no route expects one: a JWT (its
 * base64url JSON header starts `eyJ`) and a confirmation-link token (`<base36>-<hex hash>`).
 */
const TOKENS = /eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]*)*|\b[0-9a-z]{1,13}-[0-9a-f]{20,}\b/g

/** Runs of percent-escapes; each is decoded on its own, so that one malformed escape cannot keep the rest encoded. */
const ESCAPE_RUNS = /(?:%[0-9a-fA-F]{2})+/g
const ESCAPE = /%[0-9a-fA-F]{2}/
/** No client encodes a URL more than twice; each round is one pass over the text. */
const DECODING_ROUNDS = 4

const decodedOnce = (text: string): string => text.replace(ESCAPE_RUNS, decoded)

/** Percent-decoded until stable, within DECODING_ROUNDS: decoding until stable without a bound costs the text's length squared. */
function fullyDecoded(text: string): string {
  let current = text
  for (let round = 0; round < DECODING_ROUNDS && current.includes('%'); round += 1) {
    const next = decodedOnce(current)
    if (next === current) break
    current = next
  }
  return current
}

/** Every segment still percent-encoded after DECODING_ROUNDS (or not decodable) masked whole: it could hide anything. */
const maskStillEncoded = (text: string): string =>
  text
    .split('/')
    .map((segment) => (ESCAPE.test(segment) ? MASK : segment))
    .join('/')

/** Every occurrence of `secret` (lower-cased) in `text`, in any case, masked; one pass. */
function maskEvery(text: string, secret: string): string {
  const lower = text.toLowerCase()
  // Lower-casing may lengthen a character (İ): then the lower-cased text is masked, so that positions match.
  if (lower.length !== text.length) text = lower
  let masked = ''
  let from = 0
  for (let at = lower.indexOf(secret); at !== -1; at = lower.indexOf(secret, from)) {
    masked += text.slice(from, at) + MASK
    from = at + secret.length
  }
  return from === 0 ? text : masked + text.slice(from)
}

/**
 * The URL with every configured secret masked by value, wherever it sits and however the client
 * encoded or cased it: a near-miss of a route (`/webhooks/…`, `%2F` for the slashes) reaches the
 * 404 handler with the secret all the same. Where a secret is found only once decoded, or a segment
 * is still encoded after DECODING_ROUNDS, the decoded URL is what is logged, that segment masked.
 */
function maskSecretValues(url: string, secrets: readonly string[]): string {
  if (!url.includes('%') && secrets.length === 0) return url
  const plain = fullyDecoded(url)
  const stillEncoded = ESCAPE.test(plain)
  const lower = plain.toLowerCase()
  if (!stillEncoded && !secrets.some((secret) => lower.includes(secret))) return url
  return secrets.reduce(maskEvery, stillEncoded ? maskStillEncoded(plain) : plain)
}

/**
 * The request URL as it may be logged: configured secrets (lower-cased) wherever they are, secret
 * path segments, tokens and query values masked.
 */
export function redactUrl(url: string, secrets: readonly string[] = []): string {
  const valuesMasked = maskSecretValues(url, secrets)
  const queryAt = valuesMasked.indexOf('?')
  const path = maskSecretSegments(queryAt === -1 ? valuesMasked : valuesMasked.slice(0, queryAt)).replace(TOKENS, MASK)
  return queryAt === -1 ? path : `${path}?${maskQuery(valuesMasked.slice(queryAt + 1))}`
}

/** Property names whose values are credentials or secrets, in any case: never logged (docs/api.md §5). */
const SECRET_KEYS = new Set(['password', 'refresh', 'access', 'token', 'authorization', 'cookie', 'set-cookie', 'content-hmac'])

/** Logged only through the serializers below (req) and Fastify's (res: the status code), which pick fields holding no secret. */
const SERIALIZED_KEYS = new Set(['req', 'res'])

const isSecretKey = (key: string): boolean => SECRET_KEYS.has(key.toLowerCase())

/** A copy of an object that keeps its prototype, and an error's message and stack, for pino's serializers. */
function copyOf(value: object): Record<string, unknown> {
  const copy = Object.assign(Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>, value)
  if (value instanceof Error) Object.assign(copy, { message: value.message, stack: value.stack })
  return copy
}

/** `value` with its secret-named properties masked, or `value` itself when it has none (the usual case: no copy). */
function withSecretsMasked(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  let copy: Record<string, unknown> | undefined
  for (const key in value) {
    if (!isSecretKey(key)) continue
    copy ??= copyOf(value)
    copy[key] = MASK
  }
  return copy ?? value
}

/**
 * The fields of a log line with every secret-named property masked, at the top level and one level
 * down (`{ body: { password } }`), without touching the caller's objects. This replaces pino's
 * `redact`: with its `*.password`-style paths, pino ran every value of every line through the
 * redaction library's copy-and-stringify, which cost CPU and memory on every line (bench/RESULTS.md).
 * Here a line without secrets costs a scan of its keys.
 */
export function maskSecrets(fields: Record<string, unknown>): Record<string, unknown> {
  let masked = fields
  for (const key in fields) {
    if (!Object.hasOwn(fields, key) || SERIALIZED_KEYS.has(key)) continue
    const value = fields[key]
    const safe = isSecretKey(key) ? MASK : withSecretsMasked(value)
    if (safe === value) continue
    if (masked === fields) masked = { ...fields }
    masked[key] = safe
  }
  return masked
}

/** pino JSON logs with credentials and secrets (`secrets`: the configured ones, masked by value in URLs) removed (docs/api.md §5). */
export function loggerOptions(
  level: string,
  destination?: LogDestination,
  secrets: readonly string[] = [],
): LoggerOptions & { stream?: DestinationStream } {
  const maskedValues = [...new Set(secrets.filter(Boolean).map((secret) => secret.toLowerCase()))]
  return {
    level,
    formatters: { log: maskSecrets },
    serializers: {
      // No headers: the bearer token, cookies and the webhook's HMAC never reach a line.
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: redactUrl(request.url, maskedValues),
          host: request.host,
          remoteAddress: request.ip,
        }
      },
    },
    ...(destination ? { stream: destination } : {}),
  }
}

/**
 * One log line per request at `info`, written when it completes, with the request, status and
 * time: Fastify's pair of lines (received, completed) cost a measurable share of the service's CPU per
 * request in the benchmark. The "incoming request" line is still there at `debug`. A handler that
 * has something to tell sets `request.logResult`, which goes on that line as `result`, instead
 * of writing a line of its own (each line is a write to the log).
 */
export class RequestLogController extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'request_id' })
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request') // a no-op below debug
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const result = request.logResult
    const code = request.problemCode
    const fields = { req: request, res: reply, responseTime: reply.elapsedTime, ...(code ? { code } : {}), ...(result ? { result } : {}) }
    if (error) reply.log.error({ ...fields, err: error }, 'request errored')
    else reply.log.info(fields, 'request completed')
  }
}

import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto'
import { deflateRawSync, inflateRawSync } from 'node:zlib'

/**
 * What the table holds of a key (src/idempotency/repository.ts): the key is the client's secret for
 * its request, so only its SHA-256 names the row; the key itself keys the request's fingerprint
 * (an HMAC, so that the table tells nothing of a body: route 10's password) and encrypts the kept
 * answer (route 10's tokens are of no use to a reader of the table).
 */

/** A JSON value with its object keys sorted, so that `{"a":1,"b":2}` and `{"b":2,"a":1}` are one request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${canonicalJson(item)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

export const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest()

export const keyHash = (key: string): Buffer => sha256(`idempotency-key\0${key}`)

/** Bytes of the HMAC kept (migration 0013): 128 bits, as much as telling two requests apart needs. */
const FINGERPRINT_BYTES = 16

/** The request as the route read it: method, route, path parameters and the validated body. */
export function fingerprint(key: string, request: { method: string; route: string; params: unknown; body: unknown }): Buffer {
  return createHmac('sha256', key)
    .update(canonicalJson([request.method, request.route, request.params ?? {}, request.body ?? null]))
    .digest()
    .subarray(0, FINGERPRINT_BYTES)
}

/** The answer a retry replays: status, the headers that describe the body, and the body. */
export interface KeptAnswer {
  contentType: string | undefined
  location: string | undefined
  body: string
}

const IV_BYTES = 12
const TAG_BYTES = 16

const answerKey = (key: string, scope: string, route: string): Buffer =>
  Buffer.from(hkdfSync('sha256', key, `${scope}\0${route}`, 'idempotency answer', 32))

/**
 * The plain text of an answer since migration 0013: this byte, then the media type, the location and
 * the body, each ended by a newline but the last (no header value holds one), raw-deflated. Before
 * it, the answer was JSON, whose first byte is `{`.
 */
const COMPACT = 0x01

function compact(answer: KeptAnswer): Buffer {
  const text = `${answer.contentType ?? ''}\n${answer.location ?? ''}\n${answer.body}`
  return Buffer.concat([Buffer.of(COMPACT), deflateRawSync(text)])
}

function expand(plain: Buffer): KeptAnswer {
  if (plain[0] !== COMPACT) return JSON.parse(plain.toString('utf8')) as KeptAnswer
  const text = inflateRawSync(plain.subarray(1)).toString('utf8')
  const afterType = text.indexOf('\n')
  const afterLocation = text.indexOf('\n', afterType + 1)
  const contentType = text.slice(0, afterType)
  const location = text.slice(afterType + 1, afterLocation)
  return { contentType: contentType || undefined, location: location || undefined, body: text.slice(afterLocation + 1) }
}

/** AES-256-GCM under a key only the client's key derives: IV, tag, then the ciphertext of the compacted answer. */
export function sealAnswer(key: string, scope: string, route: string, answer: KeptAnswer): Buffer {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', answerKey(key, scope, route), iv)
  const text = Buffer.concat([cipher.update(compact(answer)), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), text])
}

export function openAnswer(key: string, scope: string, route: string, sealed: Uint8Array): KeptAnswer {
  const bytes = Buffer.from(sealed)
  const decipher = createDecipheriv('aes-256-gcm', answerKey(key, scope, route), bytes.subarray(0, IV_BYTES))
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
  return expand(Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]))
}

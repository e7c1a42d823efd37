import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto'

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

/** The request as the route read it: method, route, path parameters and the validated body. */
export function fingerprint(key: string, request: { method: string; route: string; params: unknown; body: unknown }): Buffer {
  return createHmac('sha256', key)
    .update(canonicalJson([request.method, request.route, request.params ?? {}, request.body ?? null]))
    .digest()
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

/** AES-256-GCM under a key only the client's key derives: IV, tag, then the ciphertext. */
export function sealAnswer(key: string, scope: string, route: string, answer: KeptAnswer): Buffer {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', answerKey(key, scope, route), iv)
  const text = Buffer.concat([cipher.update(JSON.stringify(answer), 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), text])
}

export function openAnswer(key: string, scope: string, route: string, sealed: Uint8Array): KeptAnswer {
  const bytes = Buffer.from(sealed)
  const decipher = createDecipheriv('aes-256-gcm', answerKey(key, scope, route), bytes.subarray(0, IV_BYTES))
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
  const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()])
  return JSON.parse(text.toString('utf8')) as KeptAnswer
}

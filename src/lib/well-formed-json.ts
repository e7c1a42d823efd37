import type { FastifyInstance } from 'fastify'
import { problem } from './problem.js'

/**
 * JSON can spell a lone surrogate (`"\ud800"`), which is no Unicode character and which no UTF-8
 * text can hold. Left in, it reaches the database differently on each driver: pg writes U+FFFD in
 * its place (two passwords that differ only there would hash alike), and PGlite miscounts its bytes
 * (a 500, or a string cut short without an error). So a body that carries one is bad input, refused
 * like the NUL character, before any route sees it.
 */

type JsonParser = ReturnType<FastifyInstance['getDefaultJsonParser']>

/**
 * Arrays and objects nested deeper than this are refused before parsing: no body of the service
 * nests beyond a handful of levels (the e-signature provider's notifications, under ten: e.g.
 * `document.events[].data.signer.auths[]`), and a deeper one only costs whatever walks it.
 */
export const MAX_JSON_DEPTH = 64

/** Only an escape in the text can make one (raw invalid UTF-8 is decoded to U+FFFD on reading). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
// String.prototype.isWellFormed is in Node 20, but not in the ES2023 library our types target.
const isWellFormed = (text: string): boolean => !LONE_SURROGATE.test(text)

/** A value still to look at, and where it sits: a chain to its parent, made into a path only when needed. */
interface Entry {
  key: string | number
  value: unknown
  parent: Entry | undefined
  /** Its key is not well-formed: the object holding it is named. */
  badKey?: true
}

function fieldName(entry: Entry | undefined): string {
  const path: (string | number)[] = []
  for (let at = entry; at?.parent !== undefined; at = at.parent) path.push(at.key)
  return path.reverse().join('.') || 'non_field_errors'
}

const mayHoldText = (value: unknown): boolean => typeof value === 'string' || (typeof value === 'object' && value !== null)

/** The entries of an array or object worth a look, pushed last first so that they are looked at in order. */
function pushChildren(stack: Entry[], parent: Entry, item: object): void {
  if (Array.isArray(item)) {
    for (let index = item.length - 1; index >= 0; index -= 1) {
      if (mayHoldText(item[index])) stack.push({ key: index, value: item[index] as unknown, parent })
    }
    return
  }
  const keys = Object.keys(item)
  for (let index = keys.length - 1; index >= 0; index -= 1) {
    const key = keys[index]!
    const value = (item as Record<string, unknown>)[key]
    if (!isWellFormed(key)) stack.push({ key, value, parent, badKey: true })
    else if (mayHoldText(value)) stack.push({ key, value, parent })
  }
}

/**
 * Where the first string that is not well-formed sits (`document.key`, `items.0`); for a key that
 * is not, the object holding it. One pass with a stack of its own, each value looked at once
 * (recursion copying the path at each level made a deep value cost its depth squared).
 */
export function illFormedTextPath(value: unknown): string | undefined {
  const stack: Entry[] = [{ key: '', value, parent: undefined }]
  for (let entry = stack.pop(); entry !== undefined; entry = stack.pop()) {
    if (entry.badKey) return fieldName(entry.parent)
    const item = entry.value
    if (typeof item === 'string') {
      if (!isWellFormed(item)) return fieldName(entry)
    } else if (typeof item === 'object' && item !== null) pushChildren(stack, entry, item)
  }
  return undefined
}

/** True when arrays and objects open more than `limit` deep, brackets in strings aside; one pass over the text. */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let at = 0; at < text.length; at += 1) {
    const char = text.charCodeAt(at)
    if (inString) {
      if (char === 0x5c)
        at += 1 // a backslash: the next character is escaped
      else if (char === 0x22) inString = false
    } else if (char === 0x22) inString = true
    else if (char === 0x5b || char === 0x7b) {
      depth += 1
      if (depth > limit) return true
    } else if (char === 0x5d || char === 0x7d) depth -= 1
  }
  return false
}

const loneSurrogate = (path: string) =>
  problem(400, 'invalid', 'Invalid input.', {
    extra: { errors: { [path]: ['Text must be valid Unicode: a lone surrogate (\\ud800–\\udfff) is not a character.'] } },
  })

const tooDeep = () => problem(400, 'parse_error', `JSON parse error - arrays and objects nest deeper than ${MAX_JSON_DEPTH} levels.`)

/**
 * Fastify's own JSON parser (its errors for an empty or invalid body, prototype poisoning refused),
 * refusing a body nested deeper than MAX_JSON_DEPTH (400 parse_error) or with a lone surrogate in
 * any key or string (400 invalid). Every JSON parser of the service is this one, so that they all
 * refuse the same bodies.
 */
export function wellFormedJsonParser(app: FastifyInstance): JsonParser {
  const parse = app.getDefaultJsonParser('error', 'error')
  return (request, body, done) => {
    if (nestsDeeperThan(body, MAX_JSON_DEPTH)) return done(tooDeep(), undefined)
    // Fastify's parser answers at once; our checks run outside its try, which would take their errors for bad JSON.
    let parsed: { error: Error | null; value: unknown } = { error: null, value: undefined }
    parse(request, body, (error, value) => (parsed = { error, value }))
    if (parsed.error) return done(parsed.error, undefined)
    const path = SURROGATE_ESCAPE.test(body) ? illFormedTextPath(parsed.value) : undefined
    return path === undefined ? done(null, parsed.value) : done(loneSurrogate(path), undefined)
  }
}

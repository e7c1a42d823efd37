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

/** Only an escape in the text can make one (raw invalid UTF-8 is decoded to U+FFFD on reading). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
// String.prototype.isWellFormed is in Node 20, but not in the ES2023 library our types target.
const isWellFormed = (text: string): boolean => !LONE_SURROGATE.test(text)

const fieldName = (path: string[]): string => path.join('.') || 'non_field_errors'

/**
 * Where the first string that is not well-formed sits (`document.key`, `items.0`); for a key that
 * is not, the object holding it.
 */
export function illFormedTextPath(value: unknown, path: string[] = []): string | undefined {
  if (typeof value === 'string') return isWellFormed(value) ? undefined : fieldName(path)
  if (typeof value !== 'object' || value === null) return undefined
  for (const [key, item] of Object.entries(value)) {
    if (!isWellFormed(key)) return fieldName(path)
    const found = illFormedTextPath(item, [...path, key])
    if (found !== undefined) return found
  }
  return undefined
}

const loneSurrogate = (path: string) =>
  problem(400, 'invalid', 'Invalid input.', {
    extra: { errors: { [path]: ['Text must be valid Unicode: a lone surrogate (\\ud800–\\udfff) is not a character.'] } },
  })

/**
 * Fastify's own JSON parser (its errors for an empty or invalid body, prototype poisoning refused),
 * refusing a body with a lone surrogate in any key or string (400). Every JSON parser of the
 * service is this one, so that they all refuse the same bodies.
 */
export function wellFormedJsonParser(app: FastifyInstance): JsonParser {
  const parse = app.getDefaultJsonParser('error', 'error')
  return (request, body, done) => {
    parse(request, body, (error, value) => {
      if (error) return done(error, undefined)
      const path = SURROGATE_ESCAPE.test(body) ? illFormedTextPath(value) : undefined
      return path === undefined ? done(null, value) : done(loneSurrogate(path), undefined)
    })
  }
}

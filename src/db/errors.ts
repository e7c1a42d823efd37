/** A statement or probe that got no answer within its bound (the database or pooler stalled). */
export class DatabaseTimeout extends Error {
  override name = 'DatabaseTimeout'
  constructor(readonly timeoutMs: number) {
    super(`the database did not answer within ${timeoutMs} ms`)
  }
}

/** The database is there, but set up in a way the service cannot work with (logged with its fix). */
export class DatabaseConfigurationError extends Error {
  override name = 'DatabaseConfigurationError'
}

/** SQLSTATE classes and socket errors that mean "the database cannot be reached right now". */
// 57014: statement_timeout cancelled the statement on the server (the service cancels nothing itself).
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014'])
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH'])
const UNAVAILABLE_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'Client has encountered a connection error',
  'connect ECONNREFUSED',
]

export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  if (error instanceof DatabaseTimeout || error instanceof DatabaseConfigurationError) return true
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') {
    if (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_NODE_CODES.has(code) || code.startsWith('08')) return true
  }
  if (error instanceof AggregateError && error.errors.some(isDatabaseUnavailable)) return true
  return UNAVAILABLE_MESSAGES.some((message) => error.message.includes(message))
}

/**
 * Text PostgreSQL cannot hold: a NUL character (22021, `invalid byte sequence for encoding "UTF8":
 * 0x00`), or a `\u0000` escape in jsonb (22P05). JSON carries both easily; they are bad input.
 */
export function isUnstorableText(error: unknown): boolean {
  const code = error && typeof error === 'object' ? (error as { code?: unknown }).code : undefined
  return code === '22021' || code === '22P05'
}

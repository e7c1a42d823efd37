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

/**
 * The database answers but refuses writes: a hot standby or a demoted primary behind the read-write
 * address (read_only_sql_transaction, 25006), a server in recovery. Found by the readiness probe,
 * or by a write; 503 like an unreachable database, since a failover ends it.
 */
export class DatabaseReadOnly extends Error {
  override name = 'DatabaseReadOnly'
}

/**
 * A COMMIT the server answered with the warning "canceling wait for synchronous replication" (the
 * wait was cancelled): committed on the primary but not confirmed by a synchronous standby, so lost
 * if the primary fails now. Neither a durable success nor "nothing happened": 503, may have been applied.
 */
export class CommitNotReplicated extends Error {
  override name = 'CommitNotReplicated'
}

/** SQLSTATE classes and socket errors that mean "the database cannot be reached right now". */
// 57014: statement_timeout cancelled the statement on the server (the service cancels nothing itself).
// 25P03, 25P04: the server ended a transaction left idle, or too long, and the connection with it.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '25P03', '25P04'])
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH'])
const UNAVAILABLE_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'Client has encountered a connection error',
  'connect ECONNREFUSED',
]

/** PostgreSQL's words for it, for a driver that passes no SQLSTATE on. */
const READ_ONLY_MESSAGE = /cannot execute .+ (in a read-only transaction|during recovery)/i

/** The database refused a write: read-only (25006: a standby, a demoted primary, default_transaction_read_only), or in recovery. */
export function isDatabaseReadOnly(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  if (error instanceof DatabaseReadOnly) return true
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code === '25006'
  return READ_ONLY_MESSAGE.test(error.message)
}

export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  if (error instanceof DatabaseTimeout || error instanceof DatabaseConfigurationError || error instanceof CommitNotReplicated) return true
  if (isDatabaseReadOnly(error)) return true
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

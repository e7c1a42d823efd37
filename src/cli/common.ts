import { sql } from 'kysely'
import pg from 'pg'
import { ConfigError, type DatabaseSettings } from '../config.js'
import { DataDirInUse } from '../db/data-dir-lock.js'
import { createEmbeddedDatabase, createPostgresDatabase, type DatabaseHandle } from '../db/database.js'

/**
 * What the commands (migrate, seed, confirmation-link) share: opening the database they are pointed
 * at, and turning any failure into one line on stderr that names the cause and the fix, instead of a
 * stack trace an operator has to read.
 */

/** A failure already described for the operator: its message is the line printed. */
export class CommandError extends Error {
  override name = 'CommandError'
}

/** Runs a command's body; a failure prints `<command>: <cause>: <fix>` on stderr and exits 1. */
export async function runCommand(command: string, body: () => Promise<void>): Promise<void> {
  try {
    await body()
  } catch (error) {
    process.stderr.write(`${command}: ${describeFailure(error)}\n`)
    process.exitCode = 1
  }
}

/** Arguments: the flags a command accepts; anything else is a usage error (exit 2). */
export function parseFlags<Flag extends string>(args: readonly string[], accepted: readonly Flag[], usage: string): Set<Flag> {
  const flags = new Set<Flag>()
  for (const arg of args) {
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(`usage: ${usage}\n`)
      process.exit(0)
    }
    if (!(accepted as readonly string[]).includes(arg)) {
      process.stderr.write(`unknown argument ${arg}; usage: ${usage}\n`)
      process.exit(2)
    }
    flags.add(arg as Flag)
  }
  return flags
}

interface ServerTarget {
  host: string
  port: string
  user: string
  database: string
}

function serverTarget(connectionString: string): ServerTarget {
  const url = new URL(connectionString)
  return {
    host: url.searchParams.get('host') ?? (decodeURIComponent(url.hostname) || 'localhost'),
    port: url.port || '5432',
    user: decodeURIComponent(url.username) || process.env.PGUSER || process.env.USER || 'postgres',
    database: decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username) || 'postgres',
  }
}

const shellWord = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)

function createdbCommand(target: ServerTarget): string {
  return ['createdb', '-h', target.host, '-p', target.port, '-U', target.user, target.database].map(shellWord).join(' ')
}

/** How to run migrate with --create-database: through npm where the command was, else as the image runs it. */
function createDatabaseCommand(): string {
  return process.env.npm_lifecycle_event ? 'npm run migrate -- --create-database' : 'node dist/migrate.js --create-database'
}

/** The first error in the `cause` chain with a PostgreSQL SQLSTATE or a Node system error code. */
function codeOf(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string') return code
  }
  return undefined
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''

/** One line for a failure to reach or use the PostgreSQL server at `target`. */
function describePostgresError(error: unknown, target: ServerTarget): string {
  const at = `PostgreSQL at ${target.host}:${target.port}`
  const message = messageOf(error)
  switch (codeOf(error)) {
    case '3D000':
      return `database "${target.database}" does not exist: create it with \`${createdbCommand(target)}\`, ` + `or run \`${createDatabaseCommand()}\``
    case 'ECONNREFUSED':
      return `cannot connect to ${at} (connection refused): start the server, or fix the host and port in DATABASE_URL`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host "${target.host}" not found: fix the host in DATABASE_URL`
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `cannot reach ${at} (${message}): check the host and port in DATABASE_URL and the network between`
    case '28P01':
      return `${message}: fix the user and password in DATABASE_URL`
    case '28000':
      if (/^role .* does not exist/.test(message)) {
        return `${message}: create it (\`createuser -h ${target.host} -p ${target.port} -U postgres --pwprompt ${shellWord(target.user)}\`), or fix the user in DATABASE_URL`
      }
      return `${message}: allow this user and host in the server's pg_hba.conf, or fix the user in DATABASE_URL`
    case '42501':
      return `${message}: run as the database's owner, or grant this user the privilege`
    case '42P01':
      return `${message}: the database is not migrated; run \`npm run migrate\` first`
    case '57P03':
      return `${message}: the server is starting or stopping; try again in a moment`
    default:
      break
  }
  // PgBouncer answers these with its own words (SQLSTATE 08P01).
  if (/^no such database/i.test(message)) {
    return `the pooler at ${target.host}:${target.port} has no database "${target.database}": add it to [databases] in pgbouncer.ini, or fix the database in DATABASE_URL`
  }
  if (/(SASL|password) authentication failed/i.test(message)) {
    return `${message}: fix the user and password in DATABASE_URL (behind PgBouncer, also its auth_file)`
  }
  if (/timeout/i.test(message)) {
    return `no answer from ${at} (${message}): check the host and port in DATABASE_URL and that the server accepts connections`
  }
  if (/unsupported startup parameter/i.test(message)) {
    return `${message}: the pooler refuses a connection setting; remove it from DATABASE_URL's options and PGOPTIONS`
  }
  if (/terminated unexpectedly|ECONNRESET/i.test(message)) {
    return `${at} closed the connection (${message}): check that DATABASE_URL points at PostgreSQL or PgBouncer, and the server's log`
  }
  const code = codeOf(error)
  return code ? `${message} (${code})` : message
}

/** The line for any failure of a command. */
export function describeFailure(error: unknown): string {
  if (error instanceof CommandError) return error.message
  if (error instanceof ConfigError) return `configuration error: ${error.message}`
  return messageOf(error) || 'failed'
}

async function createDatabase(connectionString: string, target: ServerTarget): Promise<boolean> {
  // From the server's maintenance database, with the same credentials.
  const url = new URL(connectionString)
  url.pathname = '/postgres'
  url.searchParams.delete('options')
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5_000 })
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(target.database)}`)
    return true
  } catch (error) {
    if (codeOf(error) === '42P04') return false // made meanwhile by another run
    throw new CommandError(
      `cannot create database "${target.database}": ${describePostgresError(error, { ...target, database: 'postgres' })}; ` +
        `or create it yourself with \`${createdbCommand(target)}\` (on the PostgreSQL server, not through a pooler)`,
    )
  } finally {
    await client.end().catch(() => undefined)
  }
}

export interface OpenOptions {
  /** Create the PostgreSQL database when it does not exist (migrate's --create-database). */
  createDatabase?: boolean
}

/**
 * The database of DATABASE_URL (one connection, no prepared statements and no session settings, so
 * that it also works through PgBouncer in transaction mode), checked with a first query; or the
 * embedded one in PGLITE_DIR. Failures are CommandErrors naming their fix.
 */
export async function openCommandDatabase(settings: DatabaseSettings, options: OpenOptions = {}): Promise<DatabaseHandle> {
  if (!settings.databaseUrl) {
    try {
      return await createEmbeddedDatabase(settings.pgliteDir)
    } catch (error) {
      if (error instanceof DataDirInUse) throw new CommandError(error.message)
      const code = codeOf(error)
      if (code === 'EACCES' || code === 'EROFS' || code === 'EPERM' || code === 'ENOTDIR' || code === 'EEXIST') {
        throw new CommandError(
          `cannot make or write the embedded database's folder ${settings.pgliteDir} (${code}): ` +
            'set PGLITE_DIR to a folder this user can write, or DATABASE_URL to a PostgreSQL server',
        )
      }
      throw new CommandError(`cannot open the embedded database in ${settings.pgliteDir}: ${messageOf(error)}`)
    }
  }
  const connectionString = settings.databaseUrl
  const target = serverTarget(connectionString)
  const open = async (): Promise<DatabaseHandle> => {
    const handle = createPostgresDatabase({ connectionString, poolSize: 1, preparedStatements: false })
    try {
      await sql`SELECT 1`.execute(handle.db)
      return handle
    } catch (error) {
      await handle.db.destroy().catch(() => undefined)
      throw error
    }
  }
  try {
    return await open()
  } catch (error) {
    if (options.createDatabase && codeOf(error) === '3D000') {
      if (await createDatabase(connectionString, target)) process.stdout.write(`created database "${target.database}"\n`)
      try {
        return await open()
      } catch (retryError) {
        throw new CommandError(describePostgresError(retryError, target))
      }
    }
    throw new CommandError(describePostgresError(error, target))
  }
}

/** A failure while the command works on a database it reached: the same one-line description. */
export function describeDatabaseWork(settings: DatabaseSettings, error: unknown): CommandError {
  if (error instanceof CommandError) return error
  if (!settings.databaseUrl) return new CommandError(`${messageOf(error)} (embedded database in ${settings.pgliteDir})`)
  return new CommandError(describePostgresError(error, serverTarget(settings.databaseUrl)))
}

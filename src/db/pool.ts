import { createHash } from 'node:crypto'
import { sql, type Kysely, type PostgresPool, type PostgresPoolClient } from 'kysely'
import pg from 'pg'
import { DatabaseConfigurationError, DatabaseTimeout } from './errors.js'

/** Statements worth naming: the application's DML, not DDL or session commands. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i

/**
 * Distinct texts get a name up to this many; beyond it (a query whose text varies, such as an
 * `IN` list of varying length) statements run unnamed, so that no connection's cache grows unbounded.
 */
const MAX_NAMED_STATEMENTS = 500

/** A pooler that keeps no session (PgBouncer in transaction mode) loses or mixes up named statements. */
const LOST_PREPARED_STATEMENT = new Set(['26000', '42P05'])

/** A setting the service sends in the startup packet, and what it must be when set elsewhere. */
export interface StartupSetting {
  name: 'plan_cache_mode' | 'statement_timeout'
  value: string
  /** Whether the value in effect (pg_settings.setting) does the setting's job. */
  satisfiedBy(setting: string): boolean
}

export interface ServicePoolOptions {
  config: Omit<pg.PoolConfig, 'options'>
  /** The service's own settings: dropped when the server (a pooler) refuses startup parameters. */
  settings: StartupSetting[]
  /** The tests' search_path, PGOPTIONS and the URL's options: always sent, the operator's choice. */
  operatorOptions: string[]
  namedStatements: boolean
  /** Client-side bound of a statement; the connection is discarded when it passes. */
  statementTimeoutMs: number
  onConfigurationError(message: string): void
}

/**
 * The service's pg pool, as Kysely sees it:
 * - every statement is bounded by a timer of its own, so a stalled database (or pooler) turns
 *   into an error in seconds even where `statement_timeout` cannot be sent; the connection that
 *   timed out is destroyed, as its answer may still arrive;
 * - with `namedStatements`, the application's queries run as named prepared statements: PostgreSQL
 *   parses and plans each distinct SQL text once per connection instead of on every execution,
 *   which the benchmarks showed to be most of the database's work per request (bench/RESULTS.md);
 * - settings the server refuses in the startup packet (PgBouncer refuses `options`) are dropped
 *   and reported as a configuration error naming where they go instead.
 */
export class ServicePool implements PostgresPool {
  private readonly names = new Map<string, string>()
  private pool: pg.Pool
  private settingsSent: boolean
  /** Whether the settings sent in the startup packet were checked on a first connection. */
  private sentSettingsChecked = false
  private namedStatements: boolean
  readonly problems: string[] = []
  /** Told how long each checkout waited, in seconds, when set (the metrics). */
  onAcquire: ((seconds: number) => void) | undefined

  get totalCount(): number {
    return this.pool.totalCount
  }

  get idleCount(): number {
    return this.pool.idleCount
  }

  get waitingCount(): number {
    return this.pool.waitingCount
  }

  constructor(private readonly options: ServicePoolOptions) {
    this.settingsSent = options.settings.length > 0
    this.namedStatements = options.namedStatements
    this.pool = this.makePool()
  }

  private makePool(): pg.Pool {
    const settings = this.settingsSent ? this.options.settings.map(({ name, value }) => `-c ${name}=${value}`) : []
    // The operator's options come after the service's: for the same setting, the operator's wins.
    const options = [...settings, ...this.options.operatorOptions].join(' ') || undefined
    const pool = new pg.Pool({ ...this.options.config, ...(options ? { options } : {}) })
    // A client that loses its server emits 'error': the pool listens on idle ones only, and an
    // unheard 'error' would crash the process. The query in flight still fails (→ 503); the pool
    // discards the broken client and the next checkout reconnects.
    pool.on('error', () => undefined)
    pool.on('connect', (client) => client.on('error', () => undefined))
    return pool
  }

  async connect(): Promise<PostgresPoolClient> {
    const onAcquire = this.onAcquire
    if (onAcquire === undefined) return this.checkout()
    const started = performance.now()
    const client = await this.checkout()
    onAcquire((performance.now() - started) / 1000)
    return client
  }

  private async checkout(): Promise<PostgresPoolClient> {
    const pool = this.pool
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (error) {
      if (!isRefusedStartupParameter(error)) throw error
      // Connections opened at once all fail on the pool with the settings: the first drops them.
      if (this.pool === pool && !this.settingsSent) throw this.operatorOptionsRefused(error)
      // The first to fail also checks and reports, before its query runs (readiness lists it at once).
      if (this.pool === pool) await this.dropSettings()
      try {
        client = await this.pool.connect()
      } catch (retryError) {
        throw isRefusedStartupParameter(retryError) ? this.operatorOptionsRefused(retryError) : retryError
      }
    }
    if (this.settingsSent && !this.sentSettingsChecked && this.pool === pool) {
      // A pooler may take a setting in the startup packet without applying it (PgBouncer ≥ 1.20 with
      // the name in track_extra_parameters: it applies only those the server reports, not
      // plan_cache_mode or statement_timeout): checked once, on the first connection.
      this.sentSettingsChecked = true
      try {
        await this.checkSettingsInEffect(client, 'accepts the settings of the startup packet but does not apply them')
      } catch (error) {
        this.sentSettingsChecked = false // the next connection checks
        client.release(error instanceof Error ? error : new Error(String(error)))
        throw error
      }
    }
    return this.wrap(client)
  }

  end(): Promise<void> {
    return this.pool.end()
  }

  /** Connects without the service's settings from now on, then tells whether they are in effect anyway. */
  private async dropSettings(): Promise<void> {
    const refused = this.pool
    this.settingsSent = false
    this.pool = this.makePool()
    void refused.end().catch(() => undefined)
    await this.checkSettingsInEffect(undefined, 'refuses settings in the startup packet')
  }

  /**
   * Reports the service's settings that are not in effect, with the ALTER ROLE that gives them;
   * on `connected` (left checked out; a failure of the check is thrown, bounded by the statement
   * timeout) or on a connection of its own. Settings the operator's options name are theirs.
   */
  private async checkSettingsInEffect(connected: pg.PoolClient | undefined, what: string): Promise<void> {
    const operatorOptions = this.options.operatorOptions.join(' ')
    const settings = this.options.settings.filter(({ name }) => !operatorOptions.includes(name))
    if (settings.length === 0) return
    const missing: StartupSetting[] = []
    let role = '<service role>'
    try {
      const client = connected ?? (await this.pool.connect())
      try {
        const { rows } = await bounded(
          client.query<{ name: string; setting: string; role: string }>(
            'SELECT name, setting, current_user AS role FROM pg_settings WHERE name = ANY($1)',
            [settings.map(({ name }) => name)],
          ),
          this.options.statementTimeoutMs,
        )
        role = rows[0]?.role ?? role
        for (const setting of settings) {
          const row = rows.find(({ name }) => name === setting.name)
          if (!row || !setting.satisfiedBy(row.setting)) missing.push(setting)
        }
      } finally {
        if (!connected) client.release()
      }
    } catch (error) {
      if (connected) throw error
      missing.push(...settings)
    }
    if (missing.length === 0) return
    const statements = missing.map(({ name, value }) => `ALTER ROLE ${role} SET ${name} = '${value}';`).join(' ')
    this.report(
      `the database server (a pooler such as PgBouncer) ${what}; ` +
        `${missing.map(({ name }) => name).join(' and ')} not in effect. Fix: ${statements} ` +
        `(or ALTER ROLE … IN DATABASE … SET), then reconnect (PgBouncer: RECONNECT on its admin console)`,
    )
  }

  /** Options the operator gave (DATABASE_URL's `options`, PGOPTIONS) that the pooler refuses: nothing to drop, only to report. */
  private operatorOptionsRefused(error: unknown): Error {
    this.report(
      `the database server (a pooler such as PgBouncer) refuses the startup options of DATABASE_URL or PGOPTIONS ` +
        `(${this.options.operatorOptions.join(' ')}). Fix: remove them and set them with ALTER ROLE … SET name = value instead`,
    )
    return new DatabaseConfigurationError('startup options refused by the database server', { cause: error })
  }

  private report(message: string): void {
    if (this.problems.includes(message)) return
    this.problems.push(message)
    this.options.onConfigurationError(message)
  }

  private wrap(client: pg.PoolClient): PostgresPoolClient {
    let broken: Error | undefined
    const timeoutMs = this.options.statementTimeoutMs
    const query = (textOrCursor: unknown, parameters?: ReadonlyArray<unknown>): Promise<unknown> => {
      if (broken) return Promise.reject(broken)
      // A cursor streams rows at the reader's pace: no timer (the service streams none today).
      if (typeof textOrCursor !== 'string') return client.query(textOrCursor as pg.Submittable) as unknown as Promise<unknown>
      const name = this.nameOf(textOrCursor)
      const values = parameters ? [...parameters] : []
      const pending = name ? client.query({ name, text: textOrCursor, values }) : client.query(textOrCursor, values)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          broken = new DatabaseTimeout(timeoutMs)
          reject(broken)
        }, timeoutMs)
        pending.then(
          (result) => {
            clearTimeout(timer)
            resolve(result)
          },
          (error: unknown) => {
            clearTimeout(timer)
            reject(name ? this.lostStatement(error) : error)
          },
        )
      })
    }
    return {
      // One implementation for Kysely's two overloads (SQL text, or a cursor it streams with).
      query: query as unknown as PostgresPoolClient['query'],
      // A connection whose statement timed out may still get that statement's answer: destroy it.
      release: () => client.release(broken),
    }
  }

  /** A named statement lost by a pooler: stop naming them, report how to fix, fail this one as 503. */
  private lostStatement(error: unknown): unknown {
    const code = error && typeof error === 'object' ? (error as { code?: unknown }).code : undefined
    if (typeof code !== 'string' || !LOST_PREPARED_STATEMENT.has(code)) return error
    this.namedStatements = false
    this.report(
      'named prepared statements are lost between transactions (a pooler in transaction mode, such as ' +
        'PgBouncer without max_prepared_statements). Fix: DATABASE_PREPARED_STATEMENTS=false, or PgBouncer ≥ 1.21 ' +
        'with max_prepared_statements > 0; the service runs unnamed statements until restarted',
    )
    return new DatabaseConfigurationError('named prepared statement lost by the pooler', { cause: error })
  }

  private nameOf(text: string): string | undefined {
    if (!this.namedStatements) return undefined
    const known = this.names.get(text)
    if (known || !PREPARABLE.test(text) || this.names.size >= MAX_NAMED_STATEMENTS) return known
    const name = `q${createHash('sha1').update(text).digest('hex').slice(0, 20)}`
    this.names.set(text, name)
    return name
  }
}

/** PgBouncer's answer to a startup parameter it does not pass on (`options`, `-c …`). */
function isRefusedStartupParameter(error: unknown): boolean {
  return error instanceof Error && /unsupported startup parameter/i.test(error.message)
}

/** `pending`, or a DatabaseTimeout after `timeoutMs`. */
async function bounded<T>(pending: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      pending,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DatabaseTimeout(timeoutMs)), timeoutMs)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** `SELECT 1` bounded by `timeoutMs`, for the readiness probe. */
export async function probe<DB>(db: Kysely<DB>, timeoutMs: number): Promise<void> {
  await bounded(sql`SELECT 1`.execute(db), timeoutMs)
}

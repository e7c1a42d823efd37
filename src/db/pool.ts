import { createHash } from 'node:crypto'
import { sql, type Kysely, type PostgresPool, type PostgresPoolClient } from 'kysely'
import pg from 'pg'
import { CommitNotReplicated, DatabaseConfigurationError, DatabaseReadOnly, DatabaseTimeout, isDatabaseReadOnly } from './errors.js'
import { FairGate } from './fair-gate.js'
import { currentWriteLedger, type WriteLedger } from './write-ledger.js'

/** Statements worth naming: the application's DML, not DDL or session commands. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i

/**
 * Distinct texts get a name up to this many; beyond it (a query whose text varies, such as an
 * `IN` list of varying length) statements run unnamed, so that no connection's cache grows unbounded.
 */
const MAX_NAMED_STATEMENTS = 500

/** What Kysely's PostgresDriver sends to open, end and abandon a transaction. */
const BEGIN = /^\s*(begin|start transaction)\b[^;]*$/i
const COMMIT = /^\s*commit\s*$/i
const ROLLBACK = /^\s*rollback\s*$/i
/** Statements that change nothing outside a transaction (a CTE may hold a write: `WITH … INSERT`). */
const READ = /^\s*(select|show|values|table|explain)\b/i
const WRITE_IN_CTE = /\b(insert|update|delete|merge)\b/i

/** Outside a transaction, whether `text` may commit a change when it runs. */
function mayWrite(text: string): boolean {
  if (READ.test(text)) return false
  return !/^\s*with\b/i.test(text) || WRITE_IN_CTE.test(text)
}

/** PostgreSQL's warning when a commit's wait for its synchronous standby is cancelled (src/db/errors.ts). */
const SYNC_REP_CANCELLED = /canceling (the )?wait for synchronous replication/i

/** An error the server answered while the connection lived on: the statement (or COMMIT) did nothing. */
function refusedByServer(error: unknown): boolean {
  if (!(error instanceof pg.DatabaseError)) return false
  return typeof error.code === 'string' && error.severity === 'ERROR'
}

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
  /**
   * Server-side bound of each statement and of each idle moment inside a transaction, set by the
   * transaction itself (`SET LOCAL`, sent with its BEGIN): a pooler in transaction mode passes no
   * startup setting on, and a role's may be missing. Undefined: transactions are opened as they come.
   */
  transactionTimeoutMs?: number | undefined
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
  /** The connections' turns per caller when all are taken (src/db/fair-gate.ts), in front of pg's own FIFO queue. */
  private readonly gate: FairGate
  /** Pools replaced (a read-only server, refused settings), closing as their connections come back. */
  private readonly retiring = new Set<Promise<void>>()
  /** `begin` as sent: with the transaction's own timeouts, in the same round trip. */
  private readonly begin: string | undefined
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
    return this.gate.waitingCount + this.pool.waitingCount
  }

  constructor(private readonly options: ServicePoolOptions) {
    this.settingsSent = options.settings.length > 0
    this.namedStatements = options.namedStatements
    this.pool = this.makePool()
    this.gate = new FairGate(options.config.max ?? 10, options.config.connectionTimeoutMillis ?? 0)
    const timeoutMs = options.transactionTimeoutMs
    this.begin = timeoutMs ? `SET LOCAL statement_timeout = ${timeoutMs}; SET LOCAL idle_in_transaction_session_timeout = ${timeoutMs}` : undefined
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
    // A request answered already (HANDLER_TIMEOUT) starts nothing more (src/db/write-ledger.ts).
    const ledger = currentWriteLedger()
    if (ledger?.abandoned) throw ledger.abandoned
    const leave = await this.gate.acquire(ledger?.caller ?? '')
    try {
      const { client, source } = await this.connectClient()
      return this.wrap(client, source, ledger, leave)
    } catch (error) {
      leave()
      throw error
    }
  }

  /** A client of the current pool, the settings dropped if the server refuses them, checked once. */
  private async connectClient(): Promise<{ client: pg.PoolClient; source: pg.Pool }> {
    const pool = this.pool
    let client: pg.PoolClient
    let source = pool
    try {
      client = await pool.connect()
    } catch (error) {
      if (!isRefusedStartupParameter(error)) throw error
      // Connections opened at once all fail on the pool with the settings: the first drops them.
      if (this.pool === pool && !this.settingsSent) throw this.operatorOptionsRefused(error)
      // The first to fail also checks and reports, before its query runs (readiness lists it at once).
      if (this.pool === pool) await this.dropSettings()
      try {
        source = this.pool
        client = await source.connect()
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
    return { client, source }
  }

  async end(): Promise<void> {
    await Promise.all([this.pool.end(), ...this.retiring])
  }

  /** Connects with a new pool from now on; the old one closes its idle connections now, the others as they come back. */
  private replacePool(): void {
    const old = this.pool
    this.pool = this.makePool()
    const closing = old.end().catch(() => undefined)
    this.retiring.add(closing)
    void closing.then(() => this.retiring.delete(closing))
  }

  /**
   * A server that refuses writes (a demoted primary, a standby behind the read-write address): every
   * connection of the pool was opened to it, idle ones included, and each would fail its next write
   * in turn. All are dropped at once, so that the next checkout connects anew and reaches whatever
   * the address names now (the new primary). Only once per pool: `pool` is the one that saw it.
   */
  private discardConnections(pool: pg.Pool): void {
    if (this.pool === pool) this.replacePool()
  }

  /**
   * Readiness: the database answers within `timeoutMs` and takes writes. Whether it takes writes is
   * asked in the same round trip (`pg_is_in_recovery()` and the session's `transaction_read_only`,
   * which default_transaction_read_only sets); a read-only answer discards the pool's connections
   * like a refused write does, so the next probe asks a new one.
   */
  async probe(timeoutMs: number): Promise<void> {
    await bounded(
      (async () => {
        const pool = this.pool
        const client = await this.connect()
        try {
          const { rows } = (await client.query(WRITABILITY_PROBE, [])) as { rows: Writability[] }
          if (refusesWrites(rows[0])) {
            this.discardConnections(pool)
            throw new DatabaseReadOnly('the database refuses writes (read-only, or in recovery)')
          }
        } finally {
          client.release()
        }
      })(),
      timeoutMs,
    )
  }

  /** Connects without the service's settings from now on, then tells whether they are in effect anyway. */
  private async dropSettings(): Promise<void> {
    this.settingsSent = false
    this.replacePool()
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

  /**
   * The connection as Kysely uses it: each statement timed, `begin` sent with the transaction's
   * timeouts, and the request's ledger told what may have committed (src/db/write-ledger.ts).
   */
  private wrap(client: pg.PoolClient, pool: pg.Pool, ledger: WriteLedger | undefined, leave: () => void): PostgresPoolClient {
    let broken: Error | undefined
    /** Inside a transaction: how to leave the ledger's list of transactions it may close. */
    let inTransaction: (() => void) | undefined
    const timeoutMs = this.options.statementTimeoutMs
    // The request was answered without waiting: a transaction whose COMMIT is not sent never commits.
    const close = (reason: Error) => {
      broken ??= reason
      void client.end().catch(() => undefined)
    }
    const query = (textOrCursor: unknown, parameters?: ReadonlyArray<unknown>): Promise<unknown> => {
      if (broken) return Promise.reject(broken)
      if (ledger?.abandoned) {
        // Nothing more runs for an answered request; a transaction it left open is never handed on.
        if (inTransaction) broken = ledger.abandoned
        return Promise.reject(ledger.abandoned)
      }
      // A cursor streams rows at the reader's pace: no timer (the service streams none today).
      if (typeof textOrCursor !== 'string') return client.query(textOrCursor as pg.Submittable) as unknown as Promise<unknown>
      let text = textOrCursor
      const begins = BEGIN.test(text)
      const commits = inTransaction !== undefined && COMMIT.test(text)
      const mayCommit = commits || (inTransaction === undefined && !begins && mayWrite(text))
      if (begins && this.begin) text = `${text}; ${this.begin}` // no parameters: one simple-protocol round trip
      if (begins) inTransaction = ledger?.transactionOpened(close) ?? (() => undefined)
      if (commits || (inTransaction && ROLLBACK.test(text))) {
        inTransaction?.()
        inTransaction = undefined
      }
      if (mayCommit) ledger?.commitSent()
      const name = this.nameOf(text)
      const values = parameters ? [...parameters] : []
      // A commit whose wait for the synchronous standby was cancelled answers success with a warning.
      let unreplicated: string | undefined
      const onNotice = (notice: { message?: string | undefined }) => {
        if (SYNC_REP_CANCELLED.test(notice.message ?? '')) unreplicated = notice.message
      }
      if (mayCommit) client.on('notice', onNotice)
      const pending = name ? client.query({ name, text, values }) : client.query(text, values)
      if (mayCommit) void pending.finally(() => client.off('notice', onNotice)).catch(() => undefined)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          broken = new DatabaseTimeout(timeoutMs)
          reject(broken)
        }, timeoutMs)
        pending.then(
          (result) => {
            clearTimeout(timer)
            // Committed on the primary only: the ledger keeps it as "may have committed".
            if (unreplicated !== undefined) return reject(new CommitNotReplicated(unreplicated))
            // BEGIN and its SET LOCALs answer one result each: Kysely reads BEGIN's.
            resolve(Array.isArray(result) ? result[0] : result)
          },
          (error: unknown) => {
            clearTimeout(timer)
            if (mayCommit && refusedByServer(error)) ledger?.commitRefused()
            if (isDatabaseReadOnly(error)) {
              broken ??= error as Error
              this.discardConnections(pool)
            }
            reject(name ? this.lostStatement(error) : error)
          },
        )
      })
    }
    return {
      // One implementation for Kysely's two overloads (SQL text, or a cursor it streams with).
      query: query as unknown as PostgresPoolClient['query'],
      // A connection whose statement timed out may still get that statement's answer, one closed for
      // an abandoned request is gone, and one on a read-only server is of no more use: destroy them.
      release: () => {
        inTransaction?.()
        client.release(broken)
        leave()
      },
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

/** Whether the server takes writes, asked in one statement (readiness). */
const WRITABILITY_PROBE = "SELECT pg_is_in_recovery() AS in_recovery, current_setting('transaction_read_only') AS read_only"

interface Writability {
  in_recovery: boolean
  read_only: string
}

const refusesWrites = (row: Writability | undefined): boolean => row !== undefined && (row.in_recovery || row.read_only === 'on')

/** Readiness on any Kysely instance (the embedded database): answers within `timeoutMs`, and takes writes. */
export async function probe<DB>(db: Kysely<DB>, timeoutMs: number): Promise<void> {
  const { rows } = await bounded(sql.raw<Writability>(WRITABILITY_PROBE).execute(db), timeoutMs)
  if (refusesWrites(rows[0])) throw new DatabaseReadOnly('the database refuses writes (read-only, or in recovery)')
}

import { mkdir } from 'node:fs/promises'
import {
  Kysely,
  Migrator,
  PostgresDialect,
  PostgresIntrospector,
  sql,
  type DatabaseIntrospector,
  type KyselyConfig,
  type TableMetadata,
} from 'kysely'
import pg from 'pg'
import { migrationProvider, migrations } from '../../db/migrations/index.js'
import { lockDataDir } from './data-dir-lock.js'
import { ServicePool, type StartupSetting } from './pool.js'
import type { Database } from '../../db/types.js'

const DATE_OID = 1082
const INT8_OID = 20

/** Both drivers read `date` as `YYYY-MM-DD` (pg would make a local-midnight Date) and int8 as a number. */
const keepDateText = (value: string): string => value
const int8ToNumber = (value: string): number => Number(value)

export interface DatabaseHandle {
  db: Kysely<Database>
  kind: 'postgres' | 'pglite'
  /** True when this call created an embedded database that has no data yet. */
  created: boolean
  /** Configuration errors found while connecting (each logged once with its fix), for readiness. */
  problems?: readonly string[]
  /** PostgreSQL's connection pool, for its metrics (absent on the embedded database). */
  pool?: ObservedPool
  /**
   * Readiness: the database answers within the bound and takes writes; throws otherwise. On
   * PostgreSQL a read-only answer also drops the pool's connections (src/db/pool.ts). Absent:
   * src/db/pool.ts `probe` on `db`.
   */
  probe?: (timeoutMs: number) => Promise<void>
}

/** A pool whose counts can be read, and whose connection checkouts are timed once someone listens. */
export interface ObservedPool {
  readonly totalCount: number
  readonly idleCount: number
  readonly waitingCount: number
  onAcquire: ((seconds: number) => void) | undefined
}

export interface PostgresOptions {
  connectionString: string
  poolSize: number
  /** Schema to put first on the search path (the tests give each worker its own). */
  schema?: string | undefined
  /**
   * Run the application's queries as named prepared statements, planned once per connection with
   * plan_cache_mode=force_generic_plan (the service; see pool.ts). Off by default: the CLIs and
   * scripts send no settings a pooler would refuse.
   */
  preparedStatements?: boolean
  /** Kysely's query log, for tools that look at the statements run (the plan check). */
  log?: KyselyConfig['log']
  /** Bound of the wait for a connection, connecting included (default 2 s). */
  connectTimeoutMs?: number
  /**
   * Client-side bound of each statement, also the server's statement_timeout: in the startup packet
   * where the server takes it, and set by each transaction itself (`SET LOCAL`, with
   * idle_in_transaction_session_timeout), which holds behind a pooler too. Default: none sent,
   * 10 min client-side.
   */
  statementTimeoutMs?: number
  /** Where configuration errors go (default: stderr, for the CLIs). */
  onConfigurationError?: (message: string) => void
}

/**
 * Server settings for each connection. With prepared statements, each is planned once: PostgreSQL's
 * default re-plans a statement on every run when its generic plan looks costlier than the custom
 * ones, which made planning most of route 9's database time (bench/RESULTS.md). The service's
 * statements look rows up by key, where a generic plan is as good. statement_timeout makes the
 * server itself give up on a statement the service has stopped waiting for.
 */
function serviceSettings(options: PostgresOptions): StartupSetting[] {
  return [
    ...(options.preparedStatements === true
      ? [{ name: 'plan_cache_mode' as const, value: 'force_generic_plan', satisfiedBy: (setting: string) => setting === 'force_generic_plan' }]
      : []),
    ...(options.statementTimeoutMs
      ? [{ name: 'statement_timeout' as const, value: `${options.statementTimeoutMs}ms`, satisfiedBy: (setting: string) => Number(setting) > 0 }]
      : []),
  ]
}

/**
 * pg takes `options` from the URL, else from its config, else from libpq's PGOPTIONS: one source
 * replaces the others. The operator's (PGOPTIONS, then the URL's) are all kept here, after the
 * service's, so all apply and, for the same setting, the operator's wins.
 */
function operatorOptions(options: PostgresOptions, urlOptions: string | undefined): string[] {
  return [
    ...(options.schema ? [`-c search_path=${options.schema}`] : []),
    ...(process.env.PGOPTIONS ? [process.env.PGOPTIONS] : []),
    ...(urlOptions ? [urlOptions] : []),
  ]
}

/** The connection URL without its `options` parameter, and that parameter (see `operatorOptions`). */
function withoutUrlOptions(connectionString: string): { connectionString: string; urlOptions: string | undefined } {
  let url: URL
  try {
    url = new URL(connectionString)
  } catch {
    return { connectionString, urlOptions: undefined } // not a URL (a socket path): pg parses it
  }
  const urlOptions = url.searchParams.get('options') ?? undefined
  if (urlOptions === undefined) return { connectionString, urlOptions }
  url.searchParams.delete('options')
  return { connectionString: url.toString(), urlOptions }
}

/**
 * The tables of the search path, by name: all Kysely's migrator asks of an introspector. Kysely's
 * own lists every column of every schema through pg_get_serial_sequence(name), a statement that fails
 * when another session drops one of those tables meanwhile (schemas migrated side by side in tests).
 */
class SearchPathIntrospector extends PostgresIntrospector {
  constructor(private readonly database: Kysely<unknown>) {
    super(database)
  }

  override async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ schema: string; name: string; kind: string }>`
      SELECT n.nspname AS schema, c.relname AS name, c.relkind AS kind
        FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
       WHERE n.nspname = ANY (current_schemas(false)) AND c.relkind IN ('r', 'v', 'p')`.execute(this.database)
    return rows.map(({ schema, name, kind }) => ({ schema, name, isView: kind === 'v', columns: [] }))
  }
}

class ServiceDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SearchPathIntrospector(db)
  }
}

export function createPostgresDatabase(options: PostgresOptions): DatabaseHandle {
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
      if (oid === DATE_OID) return keepDateText
      if (oid === INT8_OID) return int8ToNumber
      return pg.types.getTypeParser(oid, format)
    }) as typeof pg.types.getTypeParser,
  }
  const { connectionString, urlOptions } = withoutUrlOptions(options.connectionString)
  const pool = new ServicePool({
    config: {
      connectionString,
      max: options.poolSize,
      // A database that cannot be reached, or a pool that stays full, must turn into a quick 503.
      connectionTimeoutMillis: options.connectTimeoutMs ?? 2_000,
      idleTimeoutMillis: 30_000,
      types,
    },
    settings: serviceSettings(options),
    operatorOptions: operatorOptions(options, urlOptions),
    namedStatements: options.preparedStatements === true,
    // Without a configured bound (migrations, seeding) a long statement is legitimate.
    statementTimeoutMs: options.statementTimeoutMs ?? 600_000,
    transactionTimeoutMs: options.statementTimeoutMs,
    onConfigurationError: options.onConfigurationError ?? ((message) => process.stderr.write(`configuration error: ${message}\n`)),
  })
  return {
    db: new Kysely<Database>({ dialect: new ServiceDialect({ pool }), ...(options.log ? { log: options.log } : {}) }),
    kind: 'postgres',
    created: false,
    problems: pool.problems,
    pool,
    probe: (timeoutMs) => pool.probe(timeoutMs),
  }
}

/**
 * An embedded PostgreSQL kept in `dataDir`, or in memory when `dataDir` is `memory://`. PGlite is
 * loaded only here: on a real server its WASM bundle would cost start-up time and memory for nothing.
 */
export async function createEmbeddedDatabase(dataDir: string): Promise<DatabaseHandle> {
  const [{ PGlite }, { PGliteDialect }] = await Promise.all([import('@electric-sql/pglite'), import('kysely-pglite-dialect')])
  const inMemory = dataDir.startsWith('memory://')
  let created = inMemory
  if (!inMemory) {
    const { existsSync } = await import('node:fs')
    created = !existsSync(`${dataDir}/PG_VERSION`)
    await mkdir(dataDir, { recursive: true })
    lockDataDir(dataDir)
  }
  const pglite = await PGlite.create(inMemory ? undefined : dataDir, {
    parsers: { [DATE_OID]: keepDateText, [INT8_OID]: int8ToNumber },
  })
  return { db: new Kysely<Database>({ dialect: new PGliteDialect(pglite) }), kind: 'pglite', created }
}

/**
 * Whether the newest migration is recorded: one query instead of the migrator's introspection of
 * every table, which costs about half a second of each start on the embedded database.
 */
async function isUpToDate(db: Kysely<Database>, schema?: string): Promise<boolean> {
  const latest = Object.keys(migrations).at(-1)
  const table = sql.table(schema ? `${schema}.kysely_migration` : 'kysely_migration')
  try {
    const { rows } = await sql`SELECT 1 FROM ${table} WHERE name = ${latest}`.execute(db)
    return rows.length > 0
  } catch {
    return false // no bookkeeping table yet: a new database
  }
}

/**
 * Applies pending migrations. `schema` keeps Kysely's bookkeeping tables in that schema: without it
 * the migrator looks for them in every schema of the database and may find another's.
 */
export async function migrateToLatest(db: Kysely<Database>, schema?: string, beforeApplying?: () => Promise<void>): Promise<string[]> {
  if (await isUpToDate(db, schema)) return []
  await beforeApplying?.()
  const migrator = new Migrator({ db, provider: migrationProvider, ...(schema ? { migrationTableSchema: schema } : {}) })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName)
}

/**
 * The primary's WAL position and time, to the second (rounded down): a point-in-time restore to it
 * lands before whatever runs next (docs/runbook.md, "Restoring to a point in time").
 */
export async function walPosition(db: Kysely<Database>): Promise<{ lsn: string; at: string }> {
  const { rows } = await sql<{ lsn: string; at: string }>`
    SELECT pg_current_wal_lsn()::text AS lsn, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00' AS at`.execute(db)
  return rows[0]!
}

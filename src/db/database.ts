import { mkdir } from 'node:fs/promises'
import { Kysely, Migrator, PostgresDialect, sql, type KyselyConfig } from 'kysely'
import pg from 'pg'
import { migrationProvider, migrations } from '../../db/migrations/index.js'
import { PreparedStatementPool } from './prepared-statements.js'
import type { Database } from './types.js'

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
}

export interface PostgresOptions {
  connectionString: string
  poolSize: number
  /** Schema to put first on the search path (the tests give each worker its own). */
  schema?: string | undefined
  /** Run queries as named prepared statements (default true; see prepared-statements.ts). */
  preparedStatements?: boolean
  /** Kysely's query log, for tools that look at the statements run (the plan check). */
  log?: KyselyConfig['log']
}

/**
 * Server settings for each connection. With prepared statements, each is planned once: PostgreSQL's
 * default re-plans a statement on every run when its generic plan looks costlier than the custom
 * ones, which made planning most of route 9's database time (bench/RESULTS.md). The service's
 * statements look rows up by key, where a generic plan is as good.
 *
 * pg takes `options` from the URL, else from its config, else from libpq's PGOPTIONS: one source
 * replaces the others. The operator's (PGOPTIONS, then the URL's) come after the service's here,
 * so all apply and, for the same setting, the operator's wins.
 */
function connectionOptions(options: PostgresOptions, urlOptions: string | undefined): string | undefined {
  const settings = [
    ...(options.schema ? [`-c search_path=${options.schema}`] : []),
    ...(options.preparedStatements === false ? [] : ['-c plan_cache_mode=force_generic_plan']),
    ...(process.env.PGOPTIONS ? [process.env.PGOPTIONS] : []),
    ...(urlOptions ? [urlOptions] : []),
  ]
  return settings.length > 0 ? settings.join(' ') : undefined
}

/** The connection URL without its `options` parameter, and that parameter (see `connectionOptions`). */
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

export function createPostgresDatabase(options: PostgresOptions): DatabaseHandle {
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
      if (oid === DATE_OID) return keepDateText
      if (oid === INT8_OID) return int8ToNumber
      return pg.types.getTypeParser(oid, format)
    }) as typeof pg.types.getTypeParser,
  }
  const { connectionString, urlOptions } = withoutUrlOptions(options.connectionString)
  const pool = new pg.Pool({
    connectionString,
    max: options.poolSize,
    // A database that cannot be reached must turn into a quick 503, not a hung request.
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: 30_000,
    types,
    options: connectionOptions(options, urlOptions),
  })
  // A client that loses its server emits 'error': the pool listens on idle ones only, and an
  // unheard 'error' would crash the process. The query in flight still fails (→ 503); the pool
  // discards the broken client and the next checkout reconnects.
  pool.on('error', () => undefined)
  pool.on('connect', (client) => client.on('error', () => undefined))
  return {
    db: new Kysely<Database>({
      dialect: new PostgresDialect({ pool: options.preparedStatements === false ? pool : new PreparedStatementPool(pool) }),
      ...(options.log ? { log: options.log } : {}),
    }),
    kind: 'postgres',
    created: false,
  }
}

/**
 * An embedded PostgreSQL kept in `dataDir`, or in memory when `dataDir` is `memory://`. PGlite is
 * loaded only here: on a real server its WASM bundle would cost start-up time and memory for nothing.
 */
export async function createEmbeddedDatabase(dataDir: string): Promise<DatabaseHandle> {
  const [{ PGlite }, { PGliteDialect }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('kysely-pglite-dialect'),
  ])
  const inMemory = dataDir.startsWith('memory://')
  let created = inMemory
  if (!inMemory) {
    const { existsSync } = await import('node:fs')
    created = !existsSync(`${dataDir}/PG_VERSION`)
    await mkdir(dataDir, { recursive: true })
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
export async function migrateToLatest(db: Kysely<Database>, schema?: string): Promise<string[]> {
  if (await isUpToDate(db, schema)) return []
  const migrator = new Migrator({ db, provider: migrationProvider, ...(schema ? { migrationTableSchema: schema } : {}) })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName)
}

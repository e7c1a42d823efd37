import { createHash } from 'node:crypto'
import type { PostgresPool, PostgresPoolClient } from 'kysely'
import type pg from 'pg'

/** Statements worth naming: the application's DML, not DDL or session commands. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i

/**
 * Distinct texts get a name up to this many; beyond it (a query whose text varies, such as an
 * `IN` list of varying length) statements run unnamed, so that no connection's cache grows unbounded.
 */
const MAX_NAMED_STATEMENTS = 500

/**
 * Runs the application's queries as named prepared statements: PostgreSQL parses and plans each
 * distinct SQL text once per connection instead of on every execution, which the benchmarks showed
 * to be most of the database's work per request (bench/RESULTS.md). Kysely compiles the same text
 * for the same query shape, with values as parameters, so the set of texts is small and fixed.
 */
export class PreparedStatementPool implements PostgresPool {
  private readonly names = new Map<string, string>()

  constructor(private readonly pool: Pick<pg.Pool, 'end'> & { connect(): Promise<pg.PoolClient> }) {}

  async connect(): Promise<PostgresPoolClient> {
    const client = await this.pool.connect()
    const query = (textOrCursor: unknown, parameters?: ReadonlyArray<unknown>) => {
      if (typeof textOrCursor !== 'string') return client.query(textOrCursor as pg.Submittable)
      const name = this.nameOf(textOrCursor)
      const values = parameters ? [...parameters] : []
      return name ? client.query({ name, text: textOrCursor, values }) : client.query(textOrCursor, values)
    }
    // One implementation for Kysely's two overloads (SQL text, or a cursor it streams with).
    return { query: query as unknown as PostgresPoolClient['query'], release: () => client.release() }
  }

  end(): Promise<void> {
    return this.pool.end()
  }

  private nameOf(sql: string): string | undefined {
    const known = this.names.get(sql)
    if (known || !PREPARABLE.test(sql) || this.names.size >= MAX_NAMED_STATEMENTS) return known
    const name = `q${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`
    this.names.set(sql, name)
    return name
  }
}

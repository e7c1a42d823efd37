import { sql, type Expression, type RawBuilder } from 'kysely'

/**
 * A timestamptz as JavaScript's `toISOString()` writes it (UTC, milliseconds, `Z`), for values that
 * travel inside JSON built by the database, where a Date would arrive as the server's own text form.
 */
export const isoTimestamp = (value: Expression<Date | null>): RawBuilder<string> =>
  sql<string>`to_char(${value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

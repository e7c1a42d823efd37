import type { FastifyServerOptions } from 'fastify'

type Ajv = Parameters<NonNullable<NonNullable<FastifyServerOptions['ajv']>['onCreate']>>[0]

/**
 * The canonical hyphenated UUID. ajv-formats also takes a `urn:uuid:` prefix, which PostgreSQL's
 * uuid type refuses: a path id like that was a 500 instead of a 400.
 */
export const UUID_FORMAT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * An RFC 3339 time that is also an instant both JavaScript and PostgreSQL hold. ajv-formats
 * accepts a leap second (`23:59:60Z`), which `Date` cannot represent, and instants outside the
 * years 0001–9999 (year 0000, or an offset that pushes 9999-12-31 into year 10000), which reach
 * PostgreSQL in a form it refuses. Each was a 500 instead of a 400.
 */
export function isStorableInstant(value: string): boolean {
  const time = Date.parse(value)
  if (!Number.isFinite(time)) return false
  const year = new Date(time).getUTCFullYear()
  return year >= 1 && year <= 9999
}

/** Tightens ajv-formats' `uuid` and `date-time` (installed as Fastify's ajv `onCreate`). */
export function installStrictFormats(ajv: Ajv): void {
  ajv.addFormat('uuid', UUID_FORMAT)
  const rfc3339 = ajv.formats['date-time']
  const syntax: unknown = typeof rfc3339 === 'object' && !(rfc3339 instanceof RegExp) ? rfc3339.validate : undefined
  if (typeof syntax !== 'function') throw new Error('ajv-formats did not install a date-time validator')
  const isRfc3339 = syntax as (value: string) => boolean
  ajv.addFormat('date-time', { type: 'string', validate: (value: string) => isRfc3339(value) && isStorableInstant(value) })
}

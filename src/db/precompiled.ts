import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type Compilable,
  type CompiledQuery,
  type RawBuilder,
} from 'kysely'
import type { Database, Db } from '../../db/types.js'

/** A Kysely that only compiles: precompiled statements are built once, at module load. */
const compiler = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
})

/** Stands for a named parameter while the statement is built; replaced by its value on each run. */
class Placeholder {
  constructor(readonly name: string) {}

  /** A parameter turned into text or a number while building would freeze one value into the SQL. */
  [Symbol.toPrimitive](): never {
    throw misuse(`parameter "${this.name}" was converted to a primitive (string concatenation, arithmetic, comparison)`)
  }
}

const misuse = (what: string): Error => new Error(`Precompiled: ${what}; use parameters only as values in the statement (see src/db/precompiled.ts)`)

/**
 * The parameter object handed to `build`: reading a named property gives that parameter's stand-in;
 * anything that would look at the object as a whole (spread, `Object.keys`, `in`, iteration) throws,
 * since it cannot know the run's values.
 */
function standIns<Params extends object>(valueOf: (name: string) => unknown): Params {
  const refuse = (what: string) => (): never => {
    throw misuse(what)
  }
  return new Proxy({} as Params, {
    get: (_, name) => {
      if (typeof name === 'symbol') throw misuse(`the parameter object was used as ${String(name)}`)
      return valueOf(name)
    },
    has: refuse('the parameter object was tested with `in`'),
    ownKeys: refuse('the parameter object was spread or its keys listed'),
    getOwnPropertyDescriptor: refuse('the parameter object was inspected'),
    set: refuse('the parameter object was written to'),
    defineProperty: refuse('the parameter object was written to'),
    deleteProperty: refuse('the parameter object was written to'),
  })
}

type Slot = { name: string } | { constant: unknown }

/** Whether a constant can be written into the SQL text as a literal (what Kysely's `sql.lit` takes). */
const literalTypes = new Set(['string', 'number', 'boolean', 'bigint'])
const isLiteral = (value: unknown): value is string | number | boolean | bigint | null =>
  value === null || (literalTypes.has(typeof value) && (typeof value !== 'number' || Number.isFinite(value)))

const literal = (value: string | number | boolean | bigint | null): string =>
  value === null ? 'NULL' : typeof value === 'string' ? `'${value.replaceAll("'", "''")}'` : String(value)

/**
 * Rewrites `$n` references outside quoted text and comments: each becomes what `replace(n)` returns.
 * Kysely writes identifiers in double quotes and strings only through the `sql` tag's literals.
 */
function rewriteParameters(text: string, replace: (index: number) => string): string {
  let out = ''
  let i = 0
  while (i < text.length) {
    const char = text[i]!
    if (char === "'" || char === '"') {
      const close = text.indexOf(char, i + 1)
      const stop = close === -1 ? text.length : close + 1
      out += text.slice(i, stop)
      i = stop
    } else if (char === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i)
      const stop = end === -1 ? text.length : end
      out += text.slice(i, stop)
      i = stop
    } else if (char === '$' && /[0-9]/.test(text[i + 1] ?? '') && !/[\w$]/.test(text[i - 1] ?? '')) {
      let j = i + 1
      while (j < text.length && /[0-9]/.test(text[j]!)) j++
      out += replace(Number(text.slice(i + 1, j)))
      i = j
    } else {
      out += char
      i++
    }
  }
  return out
}

/**
 * A statement that Kysely builds and compiles once; each run only puts in the parameter values.
 * Building through Kysely's builder costs more CPU than a hot query's whole round trip, and the SQL
 * text is then the same string every time, which the prepared-statement cache looks up cheaply.
 *
 * Constants of the code (`status = 'open'`, `is_active = true`) are written into the SQL as
 * literals, not sent as parameters: the service's connections plan each statement once, generically
 * (`plan_cache_mode=force_generic_plan`), and a generic plan can use a partial index
 * (`WHERE status = 'open'`) only when the statement itself says the constant.
 *
 * `build` gets stand-ins for the parameters: use them as values only (in comparisons, `values`,
 * `set`, `sql` templates), not to choose the query's shape, and not as lists (`in`). The statement
 * is built twice, with different stand-ins, and misuse throws at module load.
 */
export class Precompiled<Params extends object, Row> {
  private readonly compiled: CompiledQuery<Row>
  private readonly slots: readonly Slot[]

  constructor(build: (db: Kysely<Database>, params: Params) => Compilable<Row>) {
    let compiled: CompiledQuery<Row>
    let again: CompiledQuery<Row>
    try {
      compiled = build(
        compiler,
        standIns<Params>((name) => new Placeholder(name)),
      ).compile()
      // Every stand-in null this time: a branch on a parameter (`p.x ? a : b`, `p.x ?? y`) goes the other way.
      again = build(
        compiler,
        standIns<Params>(() => null),
      ).compile()
    } catch (error) {
      const message = (error as Error).message
      throw message.startsWith('Precompiled: ') ? error : misuse(`building the statement failed (${message})`)
    }
    const sameShape =
      again.sql === compiled.sql &&
      again.parameters.length === compiled.parameters.length &&
      compiled.parameters.every((value, index) => !(value instanceof Placeholder) || again.parameters[index] === null)
    if (!sameShape) throw misuse("the statement's shape depends on a parameter's value (a condition, `??` or a default on it)")
    const slots: Slot[] = []
    const numbers = compiled.parameters.map((value) => {
      if (value instanceof Placeholder) return `$${slots.push({ name: value.name })}`
      if (isLiteral(value)) return literal(value)
      return `$${slots.push({ constant: value })}`
    })
    this.slots = slots
    this.compiled = {
      ...compiled,
      sql: rewriteParameters(compiled.sql, (index) => {
        const replacement = numbers[index - 1]
        if (replacement === undefined) throw misuse(`the SQL names $${index}, which it has no value for`)
        return replacement
      }),
      parameters: [],
    }
  }

  /** The SQL text, for tests and EXPLAIN. */
  get sql(): string {
    return this.compiled.sql
  }

  async rows(db: Db, params: Params): Promise<Row[]> {
    const values = params as Record<string, unknown>
    const parameters = this.slots.map((slot) => ('name' in slot ? values[slot.name] : slot.constant))
    const result = await db.executeQuery<Row>({ ...this.compiled, parameters })
    return result.rows
  }

  async first(db: Db, params: Params): Promise<Row | undefined> {
    return (await this.rows(db, params))[0]
  }
}

/**
 * A statement written with Kysely's `sql` tag, for the shapes its builder does not express (rows
 * from `unnest` of array parameters), as a `Precompiled` build result.
 */
export const rawStatement = <Row>(db: Kysely<Database>, statement: RawBuilder<Row>): Compilable<Row> => ({
  compile: () => statement.compile(db),
})

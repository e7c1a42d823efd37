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
import type { Database, Db } from './types.js'

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
}

type Slot = { name: string } | { constant: unknown }

/**
 * A statement that Kysely builds and compiles once; each run only puts in the parameter values.
 * Building through Kysely's builder costs more CPU than a hot query's whole round trip (about a
 * sixth of the service's CPU on the read routes in bench/RESULTS.md), and the SQL text is then the
 * same string every time, which the prepared-statement cache looks up cheaply.
 *
 * `build` gets stand-ins for the parameters: use them as values only (in comparisons, `values`,
 * `set`, `sql` templates), not to choose the query's shape, and not as lists (`in`).
 */
export class Precompiled<Params extends object, Row> {
  private readonly compiled: CompiledQuery<Row>
  private readonly slots: readonly Slot[]

  constructor(build: (db: Kysely<Database>, params: Params) => Compilable<Row>) {
    const stand = new Proxy({} as Params, { get: (_, name) => new Placeholder(String(name)) })
    this.compiled = build(compiler, stand).compile()
    this.slots = this.compiled.parameters.map((value) =>
      value instanceof Placeholder ? { name: value.name } : { constant: value },
    )
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

import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely, Transaction } from 'kysely'
import type { Database, Db } from '../../db/types.js'
import { probe as probeOn } from '../db/pool.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
    /** Configuration errors met while connecting, each already logged with its fix. */
    databaseProblems: readonly string[]
    /** Readiness: the database answers within `timeoutMs` and takes writes, else throws. */
    probeDatabase(timeoutMs: number): Promise<void>
  }
  interface FastifyRequest {
    /**
     * The database a handler works on: the request's transaction while it has one (an
     * `Idempotency-Key`'s, src/idempotency/), else `app.db`. Handlers get it from their route's
     * construct (src/tenancy/routes.ts) and never use `app.db`, so that a keyed request's work
     * commits with its kept answer.
     */
    readonly db: Db
    /** The transaction the request's work runs in, set and cleared by the plugin that opened it. */
    transaction: Transaction<Database> | null
  }
}

export interface DatabasePluginOptions {
  db: Kysely<Database>
  /** Destroy the instance when the app closes (false when a test shares it between apps). */
  owned: boolean
  problems?: readonly string[] | undefined
  /** The database's own probe (src/db/database.ts); else a probe through `db`. */
  probe?: ((timeoutMs: number) => Promise<void>) | undefined
}

/** Makes the app's one Kysely instance available as `app.db`, and each request's as `request.db`. */
export default fp(
  async function databasePlugin(app: FastifyInstance, { db, owned, problems, probe }: DatabasePluginOptions) {
    app.decorate('db', db)
    app.decorate('databaseProblems', problems ?? [])
    app.decorate('probeDatabase', probe ?? ((timeoutMs: number) => probeOn(db, timeoutMs)))
    app.decorateRequest('transaction', null)
    app.decorateRequest('db', {
      getter(this: FastifyRequest): Db {
        return this.transaction ?? db
      },
    })
    if (owned) app.addHook('onClose', async () => db.destroy())
  },
  { name: 'database' },
)

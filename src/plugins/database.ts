import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/types.js'
import { probe as probeOn } from '../db/pool.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
    /** Configuration errors met while connecting, each already logged with its fix. */
    databaseProblems: readonly string[]
    /** Readiness: the database answers within `timeoutMs` and takes writes, else throws. */
    probeDatabase(timeoutMs: number): Promise<void>
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

/** Makes the app's one Kysely instance available as `app.db` (a handler gets its database from its route's construct). */
export default fp(
  async function databasePlugin(app: FastifyInstance, { db, owned, problems, probe }: DatabasePluginOptions) {
    app.decorate('db', db)
    app.decorate('databaseProblems', problems ?? [])
    app.decorate('probeDatabase', probe ?? ((timeoutMs: number) => probeOn(db, timeoutMs)))
    if (owned) app.addHook('onClose', async () => db.destroy())
  },
  { name: 'database' },
)

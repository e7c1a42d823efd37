import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/types.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
    /** Configuration errors met while connecting, each already logged with its fix. */
    databaseProblems: readonly string[]
  }
}

export interface DatabasePluginOptions {
  db: Kysely<Database>
  /** Destroy the instance when the app closes (false when a test shares it between apps). */
  owned: boolean
  problems?: readonly string[] | undefined
}

/** Makes the app's one Kysely instance available as `app.db`. */
export default fp(
  async function databasePlugin(app: FastifyInstance, { db, owned, problems }: DatabasePluginOptions) {
    app.decorate('db', db)
    app.decorate('databaseProblems', problems ?? [])
    if (owned) app.addHook('onClose', async () => db.destroy())
  },
  { name: 'database' },
)

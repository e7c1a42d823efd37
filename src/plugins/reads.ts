import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Db } from '../../db/types.js'
import type { ReplicaSet } from '../db/replicas.js'
import type { WritePositions } from '../db/write-positions.js'

/** How a read's statement picks its database (src/tenancy/plugin.ts is its one caller). */
export interface Reads {
  /**
   * Runs `read` on a replica when one may answer this caller (up, within DATABASE_REPLICA_MAX_LAG,
   * past the caller's last write), else on the primary. A replica that fails the read costs the
   * request nothing: the read runs again on the primary. An answer `conclusive` rejects (a
   * principal or membership not found, perhaps only not yet replayed) is asked of the primary.
   */
  run<T>(request: FastifyRequest, read: (db: Db) => Promise<T>, conclusive?: (result: T) => boolean): Promise<T>
  /**
   * After a write's answer is final (its transaction committed), before the caller has it: keeps
   * the primary's WAL position for the caller's user (the route constructs of src/tenancy/routes.ts
   * declare it last in a write's onSend). A failure is logged: the next reads may then miss it.
   */
  recordWrite(request: FastifyRequest, reply: FastifyReply): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    reads: Reads
  }
}

export interface ReadsPluginOptions {
  /** Absent: every read on the primary, as before replicas. */
  replicas?: { set: ReplicaSet; positions: WritePositions; close(): Promise<void> } | undefined
}

/**
 * Reads on streaming replicas (DATABASE_REPLICA_URLS) with read-your-writes: after a write of an
 * authenticated caller, the primary's WAL position is recorded for that user (in Redis with
 * REDIS_URL, shared by the fleet), and their reads go to a replica only once it has replayed past
 * it (docs/decisions.md). The route constructs call it: `run` for a read's admission, `recordWrite`
 * last in a write's onSend, after a keyed request's commit.
 */
export default fp(
  async function readsPlugin(app: FastifyInstance, { replicas }: ReadsPluginOptions) {
    if (!replicas) {
      app.decorate('reads', { run: (_request, read) => read(app.db), recordWrite: async () => undefined } satisfies Reads)
      return
    }
    const { set, positions } = replicas
    const count = app.metrics.replicaReads(set.replicas)
    const onPrimary = <T>(read: (db: Db) => Promise<T>, reason: string) => {
      count('primary', reason)
      return read(app.db)
    }
    app.decorate('reads', {
      async run(request, read, conclusive = () => true) {
        // No replica to use: the primary, without a lookup of the caller's position.
        if (!set.usable()) return onPrimary(read, 'no_replica')
        let after: bigint | undefined
        try {
          const userId = request.tokenClaims?.user_id
          after = userId === undefined ? undefined : await positions.get(userId)
        } catch (error) {
          request.log.warn({ err: error }, 'replicas: the write positions could not be read; reading on the primary')
          return onPrimary(read, 'no_position')
        }
        const { replica, reason } = set.choose(after)
        if (!replica) return onPrimary(read, reason)
        let result
        try {
          result = await read(replica.db)
        } catch (error) {
          set.failed(replica)
          request.log.warn({ err: error, replica: replica.name }, 'replicas: a read failed on a replica; reading on the primary')
          return onPrimary(read, 'fallback')
        }
        count(replica.name, 'replica')
        return conclusive(result) ? result : onPrimary(read, 'confirm')
      },
      async recordWrite(request, reply) {
        const userId = request.tokenClaims?.user_id
        if (reply.statusCode >= 400 || !userId) return
        try {
          await positions.record(userId, await set.primaryPosition())
        } catch (error) {
          request.log.warn({ err: error }, "replicas: this write's position could not be recorded; the caller's next reads may miss it")
        }
      },
    } satisfies Reads)

    app.addHook('onReady', () => set.start())
    app.addHook('onClose', () => replicas.close())
  },
  { name: 'reads', dependencies: ['database', 'metrics'] },
)

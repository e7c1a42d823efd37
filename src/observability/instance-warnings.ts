import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'

/**
 * What each instance keeps for itself without REDIS_URL (issue 42, item 14): the login limits and the
 * Idempotency-Key quota count per instance (N instances allow N times as much) and, with replicas,
 * each caller's last write position, so that its next read on another instance may miss its write.
 * Said where several instances are likely: with replicas, or in production on PostgreSQL.
 */
export function perInstanceStateWarning(config: Pick<Config, 'env' | 'redisUrl' | 'databaseUrl' | 'databaseReplicaUrls'>): string | undefined {
  if (config.redisUrl !== undefined || config.databaseUrl === undefined) return undefined
  const replicas = config.databaseReplicaUrls.length > 0
  if (!replicas && config.env !== 'production') return undefined
  const reads = replicas ? "; with replicas, a write on one instance is not seen by the writer's next read on another" : ''
  return (
    `REDIS_URL is unset: the login limits and the Idempotency-Key quota count per instance (N instances allow N times as much)${reads}; ` +
    'set REDIS_URL when running more than one instance (docs/operations.md)'
  )
}

/** Logs perInstanceStateWarning at start, if any. */
export function warnOfPerInstanceState(log: FastifyBaseLogger, config: Config): void {
  const warning = perInstanceStateWarning(config)
  if (warning) log.warn({ perInstanceState: true }, warning)
}

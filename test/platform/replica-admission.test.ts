import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { createDemoDatabase } from '../helpers/database.js'
import { startStreamingCluster, streamingUnavailable, type StreamingCluster } from '../topology/streaming.js'
import { scaled } from '../helpers/slowness.js'
import { readsBy } from '../helpers/metrics.js'

/**
 * A read's admission on a real streaming replica, in the test's own process (the fleet's case is
 * test/topology/replicas.test.ts, with service processes): a refusal the replica gives (a token
 * family or membership it has not replayed yet) is asked of the primary, which admits; once the
 * replica has replayed it, the replica answers alone. A replica 1 s behind makes "not yet" certain.
 */
const unavailable = process.env.TEST_DATABASE_URL
  ? streamingUnavailable()
  : 'replica admission tests skipped: they run with TEST_DATABASE_URL (the PostgreSQL run)'
if (unavailable) process.stderr.write(`${unavailable}\n`)

const DATABASE = 'replica_admission'
const REPLAY_DELAY_MS = 1_000
const { roles } = DEMO

describe.skipIf(unavailable !== undefined)('a read admitted on a streaming replica', () => {
  let cluster: StreamingCluster
  let primary: DatabaseHandle

  beforeAll(async () => {
    cluster = await startStreamingCluster([`${REPLAY_DELAY_MS}ms`], (primaryUrl) => createDemoDatabase(primaryUrl, DATABASE))
    primary = createPostgresDatabase({ connectionString: cluster.url(0, DATABASE), poolSize: 4 })
  })

  afterAll(async () => {
    await primary?.db.destroy()
    await cluster?.stop()
  })

  /** An app of its own per test, on the cluster's primary and its replica (built in the test: a mutation run sees its declarations). */
  async function withApp(test: (app: FastifyInstance) => Promise<void>): Promise<void> {
    const app = await buildTestApp(
      { DATABASE_URL: cluster.url(0, DATABASE), DATABASE_REPLICA_URLS: cluster.url(1, DATABASE), DATABASE_REPLICA_MAX_LAG: '30s' },
      { database: primary },
    )
    try {
      await test(app)
    } finally {
      await app.close()
    }
  }

  const replicaTarget = () => `127.0.0.1:${cluster.nodes[1]!.port}`

  for (const [name, email, url] of [
    ['route 4 (a user read)', 'alice@acme.example', '/api/company/v1/get-user-companies'],
    ['route 7 (a company read)', 'bob@beta.example', `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}`],
  ] as const) {
    it(
      `${name}: a new session's first read is confirmed on the primary, its reads once replayed are the replica's`,
      () =>
        withApp(async (app) => {
          const { access } = await obtainTokens(app, email, DEMO_PASSWORD)
          const read = () => app.inject({ method: 'GET', url, headers: bearer(access) })
          const [confirmed, onReplica] = [await readsBy(app, 'primary', 'confirm'), await readsBy(app, replicaTarget(), 'replica')]
          const first = await read()
          expect(first.statusCode, first.body).toBe(200)
          // The replica refused (the family is not replayed yet), the primary admitted.
          expect(await readsBy(app, 'primary', 'confirm')).toBe(confirmed + 1)
          expect(await readsBy(app, replicaTarget(), 'replica')).toBe(onReplica + 1)
          await new Promise((resolve) => setTimeout(resolve, REPLAY_DELAY_MS + 1_500))
          const later = await read()
          expect(later.statusCode, later.body).toBe(200)
          expect(later.body).toBe(first.body)
          expect(await readsBy(app, 'primary', 'confirm')).toBe(confirmed + 1)
          expect(await readsBy(app, replicaTarget(), 'replica')).toBe(onReplica + 2)
        }),
      scaled(30_000),
    )
  }
})

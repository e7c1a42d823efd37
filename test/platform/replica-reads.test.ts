import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { bearer, buildTestApp, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { databaseUrl } from '../helpers/database-url.js'
import { resetDatabase, workerSchema } from '../helpers/database.js'

/**
 * DATABASE_REPLICA_URLS naming a server that is not a streaming replica (a replica promoted away,
 * or a URL pointing at the primary by mistake): it takes no reads, and every read is answered by the
 * primary. Real replicas: test/topology/replicas.test.ts.
 */
const serverUrl = process.env.TEST_DATABASE_URL

describe.skipIf(!serverUrl)('a "replica" that is not in recovery (issue 35)', () => {
  let app: FastifyInstance
  const url = () => databaseUrl(serverUrl!, { schema: workerSchema() })

  beforeAll(async () => {
    await resetDatabase()
    app = await buildTestApp({ DATABASE_URL: url(), DATABASE_REPLICA_URLS: url() })
  })
  afterAll(async () => {
    await app?.close()
  })

  const series = async (name: string) => {
    const text = await app.metrics.registry.metrics()
    return text.split('\n').filter((line) => line.startsWith(`${name}{`))
  }

  it('is down, and the reads go to the primary with reason no_replica', async () => {
    const { access } = await obtainTokens(app, 'alice@acme.example', DEMO_PASSWORD)
    const answer = await app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(access) })
    expect(answer.statusCode, answer.body).toBe(200)
    expect(await series('db_replica_up')).toEqual([expect.stringMatching(/^db_replica_up\{replica="[^"]+"\} 0$/)])
    expect(await series('db_reads_total')).toContain('db_reads_total{target="primary",reason="no_replica"} 1')
  })
})

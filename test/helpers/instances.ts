import type { FastifyInstance } from 'fastify'
import { afterEach, beforeEach } from 'vitest'
import { buildApp } from '../../src/app.js'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { createPostgresDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { testConfig } from './app.js'
import { resetDatabase, testDatabase, workerSchema } from './database.js'
import { recordConformance } from './openapi-conformance.js'

export interface Instance {
  app: FastifyInstance
  close(): Promise<void>
}

/**
 * Another instance of the service on the same database: its own pool on this worker's schema of
 * TEST_DATABASE_URL (or of `connectionString`, such as that URL with an `application_name` by which
 * a test finds its connections). On the embedded database (one per process) it shares the worker's handle.
 */
export async function startInstance(env: Record<string, string> = {}, withCounters = true, connectionString?: string): Promise<Instance> {
  const serverUrl = connectionString ?? process.env.TEST_DATABASE_URL
  const handle: DatabaseHandle = serverUrl
    ? createPostgresDatabase({ connectionString: serverUrl, poolSize: 5, schema: workerSchema(), preparedStatements: true })
    : await testDatabase()
  const app = await buildApp(testConfig(env), {
    database: handle,
    ...(withCounters ? { counterStore: new MemoryCounterStore() } : {}),
  })
  recordConformance(app)
  await app.ready()
  return {
    app,
    async close() {
      await app.close()
      if (serverUrl) await handle.db.destroy()
    },
  }
}

/** Two instances of the service on the worker's database, started anew on the demo data before each test. */
export function useTwoInstances(): { instances: Instance[] } {
  const context: { instances: Instance[] } = { instances: [] }
  beforeEach(async () => {
    await testDatabase()
    await resetDatabase()
    context.instances = [await startInstance(), await startInstance()]
  })
  afterEach(async () => {
    await Promise.all(context.instances.map((instance) => instance.close()))
  })
  return context
}

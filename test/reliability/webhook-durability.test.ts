import { afterEach, describe, expect, it } from 'vitest'
import { createEmbeddedDatabase } from '../../src/db/database.js'
import { startInstance, type Instance } from '../helpers/instances.js'
import { useServerProcesses } from '../helpers/server-process.js'
import { notification, postWebhook, storedDeliveries, WEBHOOK_SECRET } from '../webhooks/helpers.js'

describe('webhook deliveries across instances and process deaths', () => {
  const processes = useServerProcesses()
  let instances: Instance[] = []

  afterEach(async () => {
    await Promise.all(instances.map((instance) => instance.close()))
    instances = []
  })

  it('stores and applies a delivery posted to two instances at once exactly once', async () => {
    instances = [await startInstance(), await startInstance()]
    const body = JSON.stringify(notification('sign', '2026-11-20T10:00:00Z', { signer: 'bob@beta.example' }))
    const responses = await Promise.all(Array.from({ length: 20 }, (_, index) => postWebhook((instances[index % 2] as Instance).app, body)))
    expect(responses.map((response) => response.statusCode)).toEqual(Array(20).fill(201))
    expect(responses.filter((response) => response.json().duplicate === false)).toHaveLength(1)
    const deliveries = await storedDeliveries()
    expect(deliveries).toHaveLength(1)
    expect(deliveries[0]?.outcome).toBe('applied')
  })

  it('keeps a delivery acknowledged with 201 even when the process is killed right after', async () => {
    const server = await processes.start({ LOG_LEVEL: 'warn' })
    const body = JSON.stringify(notification('sign', '2026-11-20T11:00:00Z', { signer: 'alice@acme.example' }))
    const response = await fetch(`${server.baseUrl}/webhook/esign/${WEBHOOK_SECRET}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    expect(response.status).toBe(201)
    server.child.kill('SIGKILL')
    await server.exited

    if (server.dataDir) {
      // The embedded database the killed process wrote to, opened again as the next start would.
      const reopened = await createEmbeddedDatabase(server.dataDir)
      try {
        const rows = await reopened.db.selectFrom('webhook_deliveries').select(['raw_body', 'outcome']).execute()
        expect(rows).toHaveLength(1)
        expect(Buffer.from(rows[0]?.raw_body ?? []).toString()).toBe(body)
        expect(rows[0]?.outcome).toBe('applied')
      } finally {
        await reopened.db.destroy()
      }
    } else {
      const rows = await storedDeliveries()
      expect(rows).toHaveLength(1)
      expect(Buffer.from(rows[0]?.raw_body ?? []).toString()).toBe(body)
    }
  })
})

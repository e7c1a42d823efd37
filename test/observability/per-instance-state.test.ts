import { describe, expect, it } from 'vitest'
import type { LogDestination } from '../../src/logging.js'
import { buildTestApp } from '../helpers/app.js'

// Issue 42 item 14: without REDIS_URL the login limits and the Idempotency-Key quota count per
// instance, and with replicas each caller's last write position is the instance's own; where several
// instances are likely, the start says so.

/** The warnings an app logs at start that name REDIS_URL. */
async function redisWarnings(env: Record<string, string>): Promise<string[]> {
  const lines: string[] = []
  const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }
  const app = await buildTestApp({ LOG_LEVEL: 'warn', ...env }, { logDestination })
  await app.close()
  return lines
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((entry) => entry.level === 40 && entry.msg.includes('REDIS_URL'))
    .map((entry) => entry.msg)
}

// The app runs on the test database whatever these say: they only describe the deployment.
const POSTGRES = { DATABASE_URL: 'postgres://127.0.0.1:1/primary' }
const REPLICAS = { ...POSTGRES, DATABASE_REPLICA_URLS: 'postgres://127.0.0.1:1/replica' }

describe('state kept per instance without REDIS_URL', () => {
  it('is warned about at start in production on PostgreSQL, and with replicas read-your-writes across instances too', async () => {
    const [production, ...others] = await redisWarnings({ ...POSTGRES, NODE_ENV: 'production' })
    expect(others).toEqual([])
    expect(production).toMatch(/^REDIS_URL is unset: the login limits and the Idempotency-Key quota count per instance /)
    expect(production).not.toContain('read')
    const [replicas, ...more] = await redisWarnings(REPLICAS)
    expect(more).toEqual([])
    expect(replicas).toContain("a write on one instance is not seen by the writer's next read on another")
    expect(replicas).toContain('set REDIS_URL when running more than one instance')
  })

  it('is not, with REDIS_URL, on the embedded database (one process), or outside production without replicas', async () => {
    expect(await redisWarnings({ ...REPLICAS, NODE_ENV: 'production', REDIS_URL: 'redis://127.0.0.1:6379' })).toEqual([])
    expect(await redisWarnings({ NODE_ENV: 'production', ALLOW_DEMO_DATA: 'true' })).toEqual([])
    expect(await redisWarnings(POSTGRES)).toEqual([])
  })
})

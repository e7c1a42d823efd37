import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import type { LogDestination } from '../../src/logging.js'
import { buildTestApp } from '../helpers/app.js'

// Issue 33 item 12: a gateway missing from TRUST_PROXY makes every client one address (the
// gateway's), so one client's guesses lock everyone out; the misconfiguration must show.
const SERIES = 'untrusted_forwarded_for_requests_total '

async function untrustedCount(app: FastifyInstance): Promise<number | undefined> {
  const line = (await app.metrics.registry.metrics()).split('\n').find((candidate) => candidate.startsWith(SERIES))
  return line === undefined ? undefined : Number(line.slice(SERIES.length))
}

const live = (app: FastifyInstance, remoteAddress: string, forwardedFor?: string) =>
  app.inject({ method: 'GET', url: '/health/live', remoteAddress, headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor } })

/** An app with its warnings kept. */
async function withApp(env: Record<string, string>, test: (app: FastifyInstance, warnings: () => string[]) => Promise<void>): Promise<void> {
  const lines: string[] = []
  const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }
  const app = await buildTestApp({ LOG_LEVEL: 'warn', ...env }, { logDestination })
  const warnings = () =>
    lines
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((entry) => entry.level === 40)
      .map((entry) => entry.msg)
  try {
    await test(app, warnings)
  } finally {
    await app.close()
  }
}

describe('X-Forwarded-For from a peer TRUST_PROXY does not trust', () => {
  it('is counted, and warned about at most once a minute; from the gateway or without the header it is not', async () => {
    await withApp({ TRUST_PROXY: '10.0.0.5' }, async (app, warnings) => {
      expect(await untrustedCount(app)).toBe(0)
      await live(app, '10.0.0.5', '203.0.113.7')
      await live(app, '198.51.100.5')
      expect(await untrustedCount(app)).toBe(0)
      for (let index = 0; index < 3; index++) await live(app, '198.51.100.5', '203.0.113.7')
      expect(await untrustedCount(app)).toBe(3)
      const warned = warnings().filter((message) => message.includes('X-Forwarded-For'))
      expect(warned).toHaveLength(1)
      expect(warned[0]).toContain('TRUST_PROXY')
    })
  })

  it('is counted for every request behind a gateway when TRUST_PROXY is unset', async () => {
    await withApp({}, async (app) => {
      await live(app, '10.0.0.5', '203.0.113.7')
      await live(app, '10.0.0.5', '203.0.113.8')
      expect(await untrustedCount(app)).toBe(2)
    })
  })

  it('is trusted from the first hop with a hop count', async () => {
    await withApp({ TRUST_PROXY: '1' }, async (app) => {
      await live(app, '10.0.0.5', '203.0.113.7')
      expect(await untrustedCount(app)).toBe(0)
    })
  })
})

describe('TRUST_PROXY unset in production', () => {
  it('is warned about at start', async () => {
    const production = { NODE_ENV: 'production', ALLOW_DEMO_SECRETS: 'true', ALLOW_DEMO_DATA: 'true' }
    await withApp(production, async (_app, warnings) => {
      expect(warnings().filter((message) => message.includes('TRUST_PROXY'))).toHaveLength(1)
    })
    await withApp({ ...production, TRUST_PROXY: '10.0.0.5' }, async (_app, warnings) => {
      expect(warnings().filter((message) => message.includes('TRUST_PROXY'))).toEqual([])
    })
  })
})

import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../helpers/app.js'
import { resetDatabase } from '../helpers/database.js'
import { unavailableCount } from '../helpers/metrics.js'

// Issue 29: the DatabaseUnavailable alert reads 503s by cause (service_unavailable_responses_total),
// apart from the other 5xx; each 503 the error handler answers is counted once, under its cause.
// The database cause is counted in test/reliability/database-faults.test.ts, where the database goes away.

describe('503s counted by cause (issue 29)', () => {
  it('counts each login shed by a full hashing queue, and nothing under the other causes', async () => {
    await resetDatabase()
    const app = await buildTestApp({ PASSWORD_HASH_QUEUE_PER_THREAD: '1', LOGIN_FAILURES_PER_ADDRESS: '1000' })
    try {
      expect(await unavailableCount(app, 'hash_queue_full')).toBe(0)
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          app.inject({
            method: 'POST',
            url: '/api/auth/v1/token',
            payload: { email: `flood-${index}@nowhere.example`, password: `guess ${index}` },
            remoteAddress: `203.0.113.${index + 1}`,
          }),
        ),
      )
      const shed = responses.filter((response) => response.statusCode === 503).length
      expect(shed).toBeGreaterThan(0)
      expect(await unavailableCount(app, 'hash_queue_full')).toBe(shed)
      expect(await unavailableCount(app, 'database')).toBe(0)
      expect(await unavailableCount(app, 'handler_timeout')).toBe(0)
    } finally {
      await app.close()
    }
  })
})

import { describe, expect, it } from 'vitest'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { useLoggedSchema } from '../helpers/logged-schema.js'

/*
 * Route 5 declares route 7's read (issue 36): the seller's KYC comes in the statement that admits
 * the buyer, so a solicitation is two statements, the admission and the insert, where it was three
 * (the seller read again on its own). Counted on the driver's log, which PGlite's dialect lacks.
 */

const databaseUrl = process.env.TEST_DATABASE_URL
const { roles } = DEMO

describe.skipIf(!databaseUrl)('route 5: round trips (real PostgreSQL)', () => {
  const database = useLoggedSchema(databaseUrl!, 'route5trips')
  const { log } = database

  it('opens a solicitation in two statements: the admission with the seller, and the insert', async () => {
    const app = await buildTestApp({}, { database: database.handle, counterStore: new MemoryCounterStore() })
    try {
      const { access } = await log.as(null, () => obtainTokens(app, 'bob@beta.example', DEMO_PASSWORD))
      log.clear()
      const url = `/api/company/v1/${roles.betaBuyer}/document-solicitation/${roles.acmeSeller}`
      const response = await log.as('route 5', () => app.inject({ method: 'POST', url, headers: bearer(access), payload: {} }))
      expect(response.statusCode).toBe(201)
      const statements = [...log.statements.values()].filter((recorded) => recorded.routes.has('route 5'))
      expect(statements.map((recorded) => recorded.query.sql.trimStart().slice(0, 6).toLowerCase())).toEqual(['select', 'insert'])
    } finally {
      await app.close()
    }
  })
})

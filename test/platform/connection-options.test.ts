import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { createPostgresDatabase } from '../../src/db/database.js'

const serverUrl = process.env.TEST_DATABASE_URL
const operatorsOptions = process.env.PGOPTIONS

afterEach(() => {
  if (operatorsOptions === undefined) delete process.env.PGOPTIONS
  else process.env.PGOPTIONS = operatorsOptions
})

async function settingsOfAConnection(): Promise<{ commit: string; plans: string }> {
  const handle = createPostgresDatabase({ connectionString: serverUrl!, poolSize: 1 })
  try {
    const { rows } = await sql<{ commit: string; plans: string }>`
      SELECT current_setting('synchronous_commit') AS commit, current_setting('plan_cache_mode') AS plans`.execute(handle.db)
    return rows[0]!
  } finally {
    await handle.db.destroy()
  }
}

// pg reads libpq's PGOPTIONS only when it is given no `options` of its own, and the service gives
// some (plan_cache_mode): an operator's PGOPTIONS was silently dropped.
describe.skipIf(!serverUrl)('connection settings on PostgreSQL', () => {
  it('applies PGOPTIONS from the environment as well as the service’s own settings', async () => {
    process.env.PGOPTIONS = '-c synchronous_commit=off'
    expect(await settingsOfAConnection()).toEqual({ commit: 'off', plans: 'force_generic_plan' })
  })
})

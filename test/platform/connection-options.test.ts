import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { createPostgresDatabase } from '../../src/db/database.js'

const serverUrl = process.env.TEST_DATABASE_URL
const operatorsOptions = process.env.PGOPTIONS

afterEach(() => {
  if (operatorsOptions === undefined) delete process.env.PGOPTIONS
  else process.env.PGOPTIONS = operatorsOptions
})

interface Settings {
  commit: string
  plans: string
  timeout: string
}

async function settingsOfAConnection(urlOptions?: string): Promise<Settings> {
  const url = new URL(serverUrl!)
  if (urlOptions) url.searchParams.set('options', urlOptions)
  const handle = createPostgresDatabase({ connectionString: url.toString(), poolSize: 1, preparedStatements: true })
  try {
    const { rows } = await sql<Settings>`
      SELECT current_setting('synchronous_commit') AS commit, current_setting('plan_cache_mode') AS plans,
             current_setting('statement_timeout') AS timeout`.execute(handle.db)
    return rows[0]!
  } finally {
    await handle.db.destroy()
  }
}

// pg takes `options` from the URL, else from its config, else from libpq's PGOPTIONS, one replacing
// the others: the service's own (plan_cache_mode) silently dropped the operator's, or the reverse.
describe.skipIf(!serverUrl)('connection settings on PostgreSQL', () => {
  it('applies PGOPTIONS from the environment as well as the service’s own settings', async () => {
    delete process.env.PGOPTIONS
    const defaults = await settingsOfAConnection()
    process.env.PGOPTIONS = '-c synchronous_commit=off'
    expect(await settingsOfAConnection()).toEqual({ ...defaults, commit: 'off', plans: 'force_generic_plan' })
  })

  it('applies the URL’s options too, and the operator’s value wins for a setting both give', async () => {
    process.env.PGOPTIONS = '-c synchronous_commit=off'
    expect(await settingsOfAConnection('-c statement_timeout=5s')).toMatchObject({ commit: 'off', plans: 'force_generic_plan', timeout: '5s' })
    expect(await settingsOfAConnection('-c plan_cache_mode=auto')).toMatchObject({ plans: 'auto' })
  })
})

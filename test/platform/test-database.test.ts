import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { testDatabaseProblem } from '../global-setup.js'
import { freePort } from '../helpers/ports.js'
import { runProcess } from '../helpers/run-process.js'

/** TEST_DATABASE_URL pointing at a server or database that is not there (issue 34, item 6). */

const serverUrl = process.env.TEST_DATABASE_URL

async function databaseExists(url: string, name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1
  } finally {
    await client.end()
  }
}

describe('the test database (vitest globalSetup)', () => {
  it('a server that does not answer: one line naming it and the fix, before any test runs', async () => {
    const port = await freePort()
    const { code, stdout, stderr } = await runProcess(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', 'test/lib/tax-id.test.ts'], {
      PATH: process.env.PATH ?? '',
      TEST_DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/absent`,
    })
    expect(code).toBe(1)
    expect(stderr.split('\n').filter(Boolean)).toEqual([
      `TEST_DATABASE_URL: cannot connect to PostgreSQL at 127.0.0.1:${port} (connection refused): start the server, ` +
        'or fix the host and port in TEST_DATABASE_URL (or unset it to test on the embedded database)',
    ])
    expect(stdout).not.toMatch(/tax-id|Test Files/)
  })

  it.runIf(serverUrl)('a database the server lacks is created', async () => {
    const url = new URL(serverUrl ?? '')
    const name = `${url.pathname.slice(1)}_made_${process.pid}`
    url.pathname = `/${name}`
    try {
      expect(await databaseExists(serverUrl ?? '', name)).toBe(false)
      expect(await testDatabaseProblem(url.toString())).toBeUndefined()
      expect(await databaseExists(serverUrl ?? '', name)).toBe(true)
    } finally {
      const client = new pg.Client({ connectionString: serverUrl })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)}`)
      await client.end()
    }
  })
})

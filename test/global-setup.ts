import { sql } from 'kysely'
import { CommandError, openCommandDatabase } from '../src/cli/common.js'
import { createPostgresDatabase } from '../src/db/database.js'
import { runSchemaPrefix } from './helpers/database.js'

/**
 * Before any test: TEST_DATABASE_URL's database is reachable, and made when the server lacks it
 * (as `npm run migrate -- --create-database` does). Else the one line naming the cause and the
 * fix, which stops the run: every file would otherwise fail on its own with a stack trace.
 */
export async function testDatabaseProblem(url: string): Promise<string | undefined> {
  try {
    const { db } = await openCommandDatabase({ databaseUrl: url, pgliteDir: '' }, { createDatabase: true })
    await db.destroy()
    return undefined
  } catch (error) {
    if (!(error instanceof CommandError)) throw error
    return `TEST_DATABASE_URL: ${error.message.replaceAll('DATABASE_URL', 'TEST_DATABASE_URL')} (or unset it to test on the embedded database)`
  }
}

/** After a run on TEST_DATABASE_URL, drops the schemas its workers made. */
export default async function setup(): Promise<() => Promise<void>> {
  const url = process.env.TEST_DATABASE_URL
  const problem = url ? await testDatabaseProblem(url) : undefined
  if (problem) {
    // Thrown, vitest would add "No test files found" and a frame around it: the line alone says it.
    process.stderr.write(`${problem}\n`)
    process.exit(1)
  }
  return async () => {
    if (!url) return
    const { db } = createPostgresDatabase({ connectionString: url, poolSize: 1 })
    try {
      const prefix = runSchemaPrefix(process.pid)
      const { rows } = await sql<{ nspname: string }>`
        SELECT nspname FROM pg_namespace WHERE starts_with(nspname, ${prefix})`.execute(db)
      for (const { nspname } of rows) await sql`DROP SCHEMA ${sql.id(nspname)} CASCADE`.execute(db)
    } finally {
      await db.destroy()
    }
  }
}

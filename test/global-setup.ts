import { sql } from 'kysely'
import { createPostgresDatabase } from '../src/db/database.js'
import { runSchemaPrefix } from './helpers/database.js'

/** After a run on TEST_DATABASE_URL, drops the schemas its workers made. */
export default function setup(): () => Promise<void> {
  return async () => {
    const url = process.env.TEST_DATABASE_URL
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

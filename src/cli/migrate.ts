import { loadConfig } from '../config.js'
import { createEmbeddedDatabase, createPostgresDatabase, migrateToLatest } from '../db/database.js'

/** `npm run migrate`: applies pending migrations to DATABASE_URL (or the embedded database). */
const config = loadConfig()
const handle = config.databaseUrl
  ? createPostgresDatabase({ connectionString: config.databaseUrl, poolSize: 1 })
  : await createEmbeddedDatabase(config.pgliteDir)
try {
  const applied = await migrateToLatest(handle.db)
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n')
} finally {
  await handle.db.destroy()
}

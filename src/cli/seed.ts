import { isDemoSeeded, seedDemoData } from '../../db/seed/demo.js'
import { loadConfig } from '../config.js'
import { createEmbeddedDatabase, createPostgresDatabase, migrateToLatest } from '../db/database.js'

/** `npm run seed`: migrates, then loads the demo data of CONTRACT.md §6 unless it is already there. */
const config = loadConfig()
const handle = config.databaseUrl
  ? createPostgresDatabase({ connectionString: config.databaseUrl, poolSize: 1 })
  : await createEmbeddedDatabase(config.pgliteDir)
try {
  await migrateToLatest(handle.db)
  if (await isDemoSeeded(handle.db)) {
    process.stdout.write('demo data already present; nothing to do\n')
  } else {
    await seedDemoData(handle.db)
    process.stdout.write('demo data loaded\n')
  }
} finally {
  await handle.db.destroy()
}

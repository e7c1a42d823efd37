import '../require-node.js'
import { loadDatabaseSettings } from '../config.js'
import { migrateToLatest } from '../db/database.js'
import { describeDatabaseWork, openCommandDatabase, parseFlags, runCommand } from './common.js'

/**
 * `npm run migrate [-- --create-database]`: applies pending migrations to DATABASE_URL (or the
 * embedded database). Reads only where the database is: no secrets needed. --create-database first
 * creates the database of DATABASE_URL when the server does not have it (a fresh server).
 */
const flags = parseFlags(process.argv.slice(2), ['--create-database'], 'npm run migrate [-- --create-database]')

await runCommand('migrate', async () => {
  const settings = loadDatabaseSettings()
  const handle = await openCommandDatabase(settings, { createDatabase: flags.has('--create-database') })
  try {
    const applied = await migrateToLatest(handle.db)
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n')
  } catch (error) {
    throw describeDatabaseWork(settings, error)
  } finally {
    await handle.db.destroy()
  }
})

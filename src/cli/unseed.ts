import '../require-node.js'
import { removeDemoData } from '../../db/seed/demo.js'
import { loadDatabaseSettings } from '../config.js'
import { migrateToLatest } from '../db/database.js'
import { CommandError, describeDatabaseWork, openCommandDatabase, parseFlags, runCommand } from './common.js'

/**
 * `npm run unseed`: deletes the demo data (docs/demo-data.md) from DATABASE_URL or the embedded
 * database, in one transaction: what a production database that holds demo accounts needs before
 * the service starts on it. Reads the database's location only; safe to run again.
 */
parseFlags(process.argv.slice(2), [], 'npm run unseed')

await runCommand('unseed', async () => {
  const settings = loadDatabaseSettings()
  const handle = await openCommandDatabase(settings)
  try {
    // The embedded database as the service prepares it at start (PostgreSQL: `npm run migrate`).
    if (handle.kind === 'pglite') await migrateToLatest(handle.db)
    const removed = await removeDemoData(handle.db)
    if (removed.users.length === 0 && removed.companies === 0) {
      process.stdout.write('no demo data; nothing to do\n')
      return
    }
    process.stdout.write(
      `demo data removed: the users ${removed.users.join(', ')}; ${removed.companies} companies with their roles, titles, documents and accounts\n`,
    )
  } catch (error) {
    // Another company's row naming a demo user (an account a demo user removed): nothing was deleted.
    if ((error as { code?: unknown }).code === '23503') {
      throw new CommandError(
        `rows of other companies still refer to the demo data (${(error as Error).message}); nothing was removed: ` +
          'remove or change those rows first',
      )
    }
    throw describeDatabaseWork(settings, error)
  } finally {
    await handle.db.destroy()
  }
})

import '../require-node.js'
import { loadMigrateSettings } from '../config.js'
import { migrateToLatest, walPosition } from '../db/database.js'
import { markProduction } from '../db/production-mark.js'
import { describeDatabaseWork, openCommandDatabase, parseFlags, runCommand } from './common.js'

/**
 * `npm run migrate [-- --create-database]`: applies pending migrations to DATABASE_URL (or the
 * embedded database). Reads only where the database is, and NODE_ENV: no secrets needed.
 * --create-database first creates the database of DATABASE_URL when the server does not have it (a
 * fresh server). Under NODE_ENV=production it marks the database production, so that `seed` refuses
 * the demo data there from then on (docs/decisions.md). On PostgreSQL it first prints the primary's
 * WAL position and time: the point to restore to if a migration goes wrong.
 */
const flags = parseFlags(process.argv.slice(2), ['--create-database'], 'npm run migrate [-- --create-database]')

await runCommand('migrate', async () => {
  const settings = loadMigrateSettings()
  const handle = await openCommandDatabase(settings, { createDatabase: flags.has('--create-database') })
  try {
    // On PostgreSQL, where to restore to if a migration goes wrong: printed before any is applied.
    const printWalPosition = async () => {
      const { lsn, at } = await walPosition(handle.db)
      process.stdout.write(`before migrating: the primary's WAL at ${lsn}, ${at} (a restore target: docs/runbook.md)\n`)
    }
    const applied = await migrateToLatest(handle.db, undefined, settings.databaseUrl ? printWalPosition : undefined)
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n')
    if (settings.production && (await markProduction(handle.db, 'migrate'))) {
      process.stdout.write('marked as a production database: `seed` refuses the demo data there unless ALLOW_DEMO_DATA=true\n')
    }
  } catch (error) {
    throw describeDatabaseWork(settings, error)
  } finally {
    await handle.db.destroy()
  }
})

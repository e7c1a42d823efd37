import '../require-node.js'
import { isDemoSeeded, seedDemoData } from '../../db/seed/demo.js'
import { loadSeedSettings } from '../config.js'
import { migrateToLatest } from '../db/database.js'
import { productionMark } from '../db/production-mark.js'
import { CommandError, describeDatabaseWork, openCommandDatabase, parseFlags, runCommand } from './common.js'

/**
 * `npm run seed`: migrates, then loads the demo data of docs/demo-data.md unless it is already there.
 * Refused in production, and into a database marked production (by a production `migrate` or
 * start), unless ALLOW_DEMO_DATA=true: the demo users' passwords are public.
 */
parseFlags(process.argv.slice(2), [], 'npm run seed')

await runCommand('seed', async () => {
  const settings = loadSeedSettings()
  const handle = await openCommandDatabase(settings)
  try {
    await migrateToLatest(handle.db)
    const mark = settings.allowDemoData ? undefined : await productionMark(handle.db)
    if (mark) {
      const by = mark.markedBy === 'migrate' ? 'migrate' : "the service's start"
      throw new CommandError(
        `this database is marked production (by ${by} at ${mark.markedAt.toISOString()}): the demo data (users with a public password) ` +
          'is refused there; set ALLOW_DEMO_DATA=true if a demo or staging deployment is meant',
      )
    }
    if (await isDemoSeeded(handle.db)) {
      process.stdout.write('demo data already present; nothing to do\n')
    } else {
      await seedDemoData(handle.db)
      process.stdout.write('demo data loaded\n')
    }
  } catch (error) {
    throw describeDatabaseWork(settings, error)
  } finally {
    await handle.db.destroy()
  }
})

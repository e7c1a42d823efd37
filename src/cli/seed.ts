import '../require-node.js'
import { isDemoSeeded, seedDemoData } from '../../db/seed/demo.js'
import { loadSeedSettings } from '../config.js'
import { migrateToLatest } from '../db/database.js'
import { describeDatabaseWork, openCommandDatabase, parseFlags, runCommand } from './common.js'

/** `npm run seed`: migrates, then loads the demo data of docs/demo-data.md unless it is already there. */
parseFlags(process.argv.slice(2), [], 'npm run seed')

await runCommand('seed', async () => {
  // In production only with ALLOW_DEMO_DATA=true: the demo users' password is public.
  const settings = loadSeedSettings()
  const handle = await openCommandDatabase(settings)
  try {
    await migrateToLatest(handle.db)
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

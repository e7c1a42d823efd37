import { seedDemoData } from '../db/seed/demo.js'
import { loadVolume, volumeCounts } from '../db/seed/volume.js'
import { createPostgresDatabase, migrateToLatest } from '../src/db/database.js'
import { recreateEmptyDatabase } from './database.js'

/**
 * A database with the demo data and a production-like volume on top (db/seed/volume.ts): dropped,
 * created, migrated, seeded, loaded, analysed.
 */
export async function recreateVolumeDatabase(databaseUrl: string, factor: number, log: (line: string) => void): Promise<void> {
  await recreateEmptyDatabase(databaseUrl)
  const handle = createPostgresDatabase({ connectionString: databaseUrl, poolSize: 1, preparedStatements: false })
  try {
    await migrateToLatest(handle.db)
    await seedDemoData(handle.db)
    log(`volume factor ${factor}: ${JSON.stringify(volumeCounts(factor))}`)
    await loadVolume(handle.db, factor, log)
  } finally {
    await handle.db.destroy()
  }
}

// `tsx bench/volume.ts <url> <factor>`: only the generation, timed.
if (import.meta.url === `file://${process.argv[1]}`) {
  const [url, factor] = process.argv.slice(2)
  if (!url || !factor) throw new Error('usage: tsx bench/volume.ts <database url> <scale factor>')
  const started = Date.now()
  await recreateVolumeDatabase(url, Number(factor), (line) => console.log(line))
  console.log(`generated in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

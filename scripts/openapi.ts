// `npm run openapi [-- <file>]`: writes the OpenAPI document the service publishes at /docs/json,
// built from the route schemas without a database (the pool points nowhere and is never used).
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { createPostgresDatabase } from '../src/db/database.js'

const nowhere = createPostgresDatabase({ connectionString: 'postgres://openapi@127.0.0.1:1/none', poolSize: 1 })
const app = await buildApp(loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), { database: nowhere })
try {
  await app.ready()
  const text = `${JSON.stringify(app.swagger(), null, 2)}\n`
  const target = process.argv[2]
  if (target) {
    await mkdir(path.dirname(target), { recursive: true })
    await writeFile(target, text)
  }
  else process.stdout.write(text)
} finally {
  await app.close()
  await nowhere.db.destroy()
}

// `npm run openapi [-- <file>]`: writes the OpenAPI document the service publishes at /docs/json,
// built from the route schemas without a database (the pool points nowhere and is never used).
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { createPostgresDatabase } from '../src/db/database.js'

export async function publishedDocument(): Promise<Record<string, unknown>> {
  const nowhere = createPostgresDatabase({ connectionString: 'postgres://openapi@127.0.0.1:1/none', poolSize: 1 })
  const app = await buildApp(loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), { database: nowhere })
  try {
    await app.ready()
    return app.swagger() as unknown as Record<string, unknown>
  } finally {
    await app.close()
    await nowhere.db.destroy()
  }
}

async function main(target: string | undefined): Promise<void> {
  const text = `${JSON.stringify(await publishedDocument(), null, 2)}\n`
  if (!target) {
    process.stdout.write(text)
    return
  }
  await mkdir(path.dirname(target), { recursive: true })
  await writeFile(target, text)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main(process.argv[2])

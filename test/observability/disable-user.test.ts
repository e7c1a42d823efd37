import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { AUDIT_EVENTS } from '../../src/observability/audit.js'
import { DEMO, DEMO_PASSWORD } from '../helpers/app.js'
import { databaseUrl } from '../helpers/database-url.js'
import { workerSchema } from '../helpers/database.js'
import { useServerProcesses } from '../helpers/server-process.js'

const processes = useServerProcesses()

/** `npm run disable-user` (through tsx) on the database the service process used. */
function disableUser(email: string, database: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/disable-user.ts', email], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...database },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += String(chunk)))
  child.stderr.on('data', (chunk: Buffer) => (stderr += String(chunk)))
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })))
}

describe('npm run disable-user (issue 19: a user disabled revokes their families, audited)', () => {
  it('disables the user, revokes their token families, and logs the event once at warn, without the e-mail', async () => {
    const service = await processes.start()
    const login = () =>
      fetch(`${service.baseUrl}/api/auth/v1/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'bob@beta.example', password: DEMO_PASSWORD }),
      }).then((response) => response.json() as Promise<{ refresh: string }>)
    await login()
    const { refresh } = await login()
    // PGlite allows one process per data folder: the service lets go of it first.
    await service.stop()
    const database: Record<string, string> = process.env.TEST_DATABASE_URL
      ? { DATABASE_URL: databaseUrl(process.env.TEST_DATABASE_URL, { schema: workerSchema() }) }
      : { PGLITE_DIR: service.dataDir ?? '' }

    const run = await disableUser(' Bob@Beta.example ', database)
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    const events = lines.filter((line) => line.event === AUDIT_EVENTS.tokenFamiliesRevoked)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ level: 40, user_id: DEMO.users.bob, reason: 'user_disabled', families: 2 })
    expect(run.stdout.toLowerCase()).not.toContain('bob@beta.example')

    // Again: nobody active has the e-mail any more.
    const again = await disableUser('bob@beta.example', database)
    expect(again.code).toBe(1)
    expect(again.stderr).toContain('no active user has this e-mail')

    // The family really is revoked: the service, started again on the same database, refuses the refresh token.
    const restarted = await processes.start(service.dataDir ? { PGLITE_DIR: service.dataDir } : {})
    const refreshed = await fetch(`${restarted.baseUrl}/api/auth/v1/token/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh }),
    })
    expect(refreshed.status).toBe(401)
  }, 240_000)
})

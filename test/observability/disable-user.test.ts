import { describe, expect, it } from 'vitest'
import { AUDIT_EVENTS } from '../../src/observability/audit.js'
import { DEMO, DEMO_PASSWORD } from '../helpers/app.js'
import { databaseUrl } from '../helpers/database-url.js'
import { workerSchema } from '../helpers/database.js'
import { useServerProcesses } from '../helpers/server-process.js'
import { runProcess, type ProcessRun } from '../helpers/run-process.js'

const processes = useServerProcesses()

/** `npm run disable-user` (through tsx) on the database the service process used. */
function disableUser(user: string, database: Record<string, string>): Promise<ProcessRun> {
  return runProcess(process.execPath, ['--import', 'tsx', 'src/cli/disable-user.ts', user], {
    PATH: process.env.PATH ?? '',
    LOG_LEVEL: 'info',
    ...database,
  })
}

describe('npm run disable-user (issues 19, 34: a user disabled revokes their families, audited; named as the logs name them)', () => {
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
    expect((await disableUser(DEMO.users.bob, database)).stderr).toContain('no active user has this id')

    // The family really is revoked: the service, started again on the same database, refuses the refresh token.
    const restarted = await processes.start(service.dataDir ? { PGLITE_DIR: service.dataDir } : {})
    const refreshed = await fetch(`${restarted.baseUrl}/api/auth/v1/token/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh }),
    })
    expect(refreshed.status).toBe(401)
  })
  it('takes the email_digest of a login_throttled line and the user_id of a login_succeeded line, as the service logged them', async () => {
    const service = await processes.start({ LOGIN_FAILURES_PER_CLIENT: '2' })
    const post = (body: unknown) =>
      fetch(`${service.baseUrl}/api/auth/v1/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    // Guesses at carol's password until refused; dave logs in.
    for (let attempt = 0; attempt < 3; attempt++) await post({ email: 'Carol@Gamma.example', password: 'not the password' })
    expect((await post({ email: 'carol@gamma.example', password: 'not the password' })).status).toBe(429)
    expect((await post({ email: 'dave@delta.example', password: DEMO_PASSWORD })).status).toBe(200)
    await service.stop()
    const events = service.output.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>]
      } catch {
        return []
      }
    })
    const digest = events.find((line) => line.event === AUDIT_EVENTS.loginThrottled)?.email_digest
    const userId = events.find((line) => line.event === AUDIT_EVENTS.loginSucceeded)?.user_id
    expect(digest).toMatch(/^[0-9a-f]{16}$/)
    expect(userId).toBe(DEMO.users.dave)
    const database: Record<string, string> = process.env.TEST_DATABASE_URL
      ? { DATABASE_URL: databaseUrl(process.env.TEST_DATABASE_URL, { schema: workerSchema() }) }
      : { PGLITE_DIR: service.dataDir ?? '' }

    const byDigest = await disableUser(String(digest), database)
    expect(byDigest.code, byDigest.stderr).toBe(0)
    expect(byDigest.stdout).toContain(`"user_id":"${DEMO.users.carol}"`)
    const byId = await disableUser(String(userId).toUpperCase(), database)
    expect(byId.code, byId.stderr).toBe(0)
    expect(byId.stdout).toContain(`"user_id":"${DEMO.users.dave}"`)

    // A digest of nobody's e-mail (a guess at an address that has no account), and a word that names no user.
    const nobody = await disableUser('0123456789abcdef', database)
    expect(nobody.code).toBe(1)
    expect(nobody.stderr).toContain('no active user has an e-mail of this digest')
    const word = await disableUser('carol', database)
    expect(word.code).toBe(2)
    expect(word.stderr).toContain('usage: npm run disable-user -- <user_id | email_digest | e-mail>')

    // Both are refused at login now.
    const restarted = await processes.start(service.dataDir ? { PGLITE_DIR: service.dataDir } : {})
    for (const email of ['carol@gamma.example', 'dave@delta.example']) {
      const login = await fetch(`${restarted.baseUrl}/api/auth/v1/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: DEMO_PASSWORD }),
      })
      expect(login.status, email).toBe(401)
    }
  })
})

import '../require-node.js'
import { pino } from 'pino'
import { disableUser } from '../auth/disable-user.js'
import { normaliseEmail } from '../auth/login.js'
import { loadDisableUserSettings } from '../config.js'
import { migrateToLatest } from '../db/database.js'
import { audit } from '../observability/audit.js'
import { CommandError, describeDatabaseWork, openCommandDatabase, runCommand } from './common.js'

/**
 * `npm run disable-user -- <email>`: disables a user at once. Their access tokens stop working on
 * their next request and every refresh-token family is revoked (the database's trigger); the audit
 * event `token_families_revoked` is written to stdout as a JSON log line, as the service writes
 * its own. Reads the database's location and LOG_LEVEL only (no secrets). Do not run it on an
 * embedded database while the service has it open.
 */
const email = process.argv[2]
if (!email || email.startsWith('-') || process.argv.length > 3) {
  process.stderr.write('usage: npm run disable-user -- <email>\n')
  process.exit(2)
}

await runCommand('disable-user', async () => {
  const settings = loadDisableUserSettings()
  const log = pino({ level: settings.logLevel, base: { pid: process.pid, command: 'disable-user' } })
  const handle = await openCommandDatabase(settings)
  try {
    // The embedded database as the service prepares it at start (PostgreSQL: `npm run migrate`).
    if (handle.kind === 'pglite') await migrateToLatest(handle.db)
    const disabled = await disableUser(handle.db, normaliseEmail(email))
    if (!disabled) throw new CommandError(`${email}: no active user has this e-mail`)
    audit.tokenFamiliesRevoked(log, { userId: disabled.userId, reason: 'user_disabled', families: disabled.families })
  } catch (error) {
    throw describeDatabaseWork(settings, error)
  } finally {
    await handle.db.destroy()
  }
})

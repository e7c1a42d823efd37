import '../require-node.js'
import { pino } from 'pino'
import { disableUser, userReference } from '../auth/disable-user.js'
import { loadDisableUserSettings } from '../config.js'
import { migrateToLatest } from '../db/database.js'
import { audit } from '../observability/audit.js'
import { CommandError, describeDatabaseWork, openCommandDatabase, runCommand } from './common.js'

/**
 * `npm run disable-user -- <user>`: disables a user at once, named as the logs name them: a
 * `user_id`, an `email_digest` (login_throttled lines) or the e-mail. Their access tokens stop working
 * on their next request and every refresh-token family is revoked (the database's trigger); the audit
 * event `token_families_revoked` is written to stdout as a JSON log line, as the service writes its
 * own. Reads the database's location and LOG_LEVEL only (no secrets). Do not run it on an embedded
 * database while the service has it open.
 */
const USAGE = 'npm run disable-user -- <user_id | email_digest | e-mail>'
const argument = process.argv[2]
const reference = argument === undefined ? undefined : userReference(argument)
if (!argument || !reference || process.argv.length > 3) {
  process.stderr.write(`usage: ${USAGE}\n  a user id (UUID), the 16 hex digits of an email_digest as a log line prints them, or an e-mail\n`)
  process.exit(2)
}

await runCommand('disable-user', async () => {
  const settings = loadDisableUserSettings()
  const log = pino({ level: settings.logLevel, base: { pid: process.pid, command: 'disable-user' } })
  const handle = await openCommandDatabase(settings)
  try {
    // The embedded database as the service prepares it at start (PostgreSQL: `npm run migrate`).
    if (handle.kind === 'pglite') await migrateToLatest(handle.db)
    const outcome = await disableUser(handle.db, reference)
    const what = 'id' in reference ? 'this id' : 'email' in reference ? 'this e-mail' : 'an e-mail of this digest'
    if ('userIds' in outcome)
      throw new CommandError(`${argument}: ${outcome.matches} active users have ${what} (${outcome.userIds.join(', ')}): give the user id`)
    if (!('disabled' in outcome)) throw new CommandError(`${argument}: no active user has ${what}`)
    audit.tokenFamiliesRevoked(log, { userId: outcome.disabled.userId, reason: 'user_disabled', families: outcome.disabled.families })
  } catch (error) {
    throw describeDatabaseWork(settings, error)
  } finally {
    await handle.db.destroy()
  }
})

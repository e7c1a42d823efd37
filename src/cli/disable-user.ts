import { pino } from 'pino'
import { disableUser } from '../auth/disable-user.js'
import { normaliseEmail } from '../auth/login.js'
import { loadConfig } from '../config.js'
import { openDatabase } from '../db/open.js'
import { audit } from '../observability/audit.js'

/**
 * `npm run disable-user -- <email>`: disables a user at once. Their access tokens stop working on
 * their next request and every refresh-token family is revoked (the database's trigger); the audit
 * event `token_families_revoked` is written to stdout as a JSON log line, as the service writes
 * its own. Do not run it on an embedded database while the service has it open.
 */
const email = process.argv[2]
if (!email || process.argv.length > 3) {
  process.stderr.write('usage: npm run disable-user -- <email>\n')
  process.exit(2)
}

const config = loadConfig()
const log = pino({ level: config.logLevel, base: { pid: process.pid, command: 'disable-user' } })
const handle = await openDatabase(config, pino({ level: 'silent' }))
try {
  const disabled = await disableUser(handle.db, normaliseEmail(email))
  if (!disabled) {
    process.stderr.write(`${email}: no active user has this e-mail\n`)
    process.exitCode = 1
  } else {
    audit.tokenFamiliesRevoked(log, { userId: disabled.userId, reason: 'user_disabled', families: disabled.families })
  }
} finally {
  await handle.db.destroy()
}

import { pino } from 'pino'
import { normaliseEmail } from '../auth/login.js'
import { loadConfig } from '../config.js'
import { seedDemoUnlessPresent } from '../../db/seed/demo.js'
import { openDatabase } from '../db/open.js'
import { confirmationPath } from '../registration/confirmation.js'
import { findUserForLink } from '../registration/repository.js'

/**
 * `npm run confirmation-link -- <email>`: prints a new confirmation link (route 10) for a migrated
 * account awaiting confirmation, made like the old platform's e-mails. With PUBLIC_BASE_URL set it
 * prints the full URL, else the path. The database is the service's own (DATABASE_URL, or the
 * embedded one, prepared as the service would at start). Do not run it on an embedded database
 * while the service has it open: PGlite allows one process per data folder.
 */
const email = process.argv[2]
if (!email || process.argv.length > 3) {
  process.stderr.write('usage: npm run confirmation-link -- <email>\n')
  process.exit(2)
}

/** Why no link can be made for this user, or undefined when one can. */
function refusal(user: Awaited<ReturnType<typeof findUserForLink>>): string | undefined {
  if (!user) return 'no user has this e-mail'
  if (user.migration_state === 'confirmed') return 'this migrated account is already confirmed; the user logs in with their password'
  if (user.migration_state !== 'pending') return 'this account was not migrated from the old platform'
  return undefined
}

const config = loadConfig()
const handle = await openDatabase(config, pino({ level: 'silent' }), { seedNewEmbedded: seedDemoUnlessPresent })
try {
  const user = await findUserForLink(handle.db, normaliseEmail(email))
  const reason = refusal(user)
  if (!user || reason) {
    process.stderr.write(`${email}: ${reason}\n`)
    process.exitCode = 1
  } else {
    const now = new Date()
    const path = confirmationPath(user, config.legacySecretKey, now)
    const base = process.env.PUBLIC_BASE_URL?.replace(/\/+$/, '')
    process.stdout.write(`${base ? `${base}${path}` : path}\n`)
    const validUntil = new Date(now.getTime() + config.linkTtl * 1000).toISOString()
    process.stderr.write(`valid until ${validUntil}, or until the account is confirmed or its password changes\n`)
  }
} finally {
  await handle.db.destroy()
}

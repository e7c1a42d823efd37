import '../require-node.js'
import { seedDemoUnlessPresent } from '../../db/seed/demo.js'
import { normaliseEmail } from '../auth/login.js'
import { loadConfirmationLinkSettings } from '../config.js'
import { migrateToLatest, type DatabaseHandle } from '../db/database.js'
import { confirmationPath } from '../registration/confirmation.js'
import { findUserForLink } from '../registration/repository.js'
import { CommandError, describeDatabaseWork, openCommandDatabase, runCommand } from './common.js'

/**
 * `npm run confirmation-link -- <email>`: prints a new confirmation link (route 10) for a migrated
 * account awaiting confirmation, made like the old platform's e-mails. With PUBLIC_BASE_URL set it
 * prints the full URL, else the path. The database is the service's own (DATABASE_URL, or the
 * embedded one, prepared as the service would at start). Reads the database's location,
 * LEGACY_SECRET_KEY and LINK_TTL only. Do not run it on an embedded database while the service has
 * it open: PGlite allows one process per data folder.
 */
const email = process.argv[2]
if (!email || email.startsWith('-') || process.argv.length > 3) {
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

/** The embedded database as the service prepares it at start: migrated, and a new one given the demo data where allowed. */
async function prepareEmbedded(handle: DatabaseHandle, demoData: boolean): Promise<void> {
  await migrateToLatest(handle.db)
  if (handle.created && demoData) await seedDemoUnlessPresent(handle.db)
}

await runCommand('confirmation-link', async () => {
  const settings = loadConfirmationLinkSettings()
  const handle = await openCommandDatabase(settings)
  try {
    if (handle.kind === 'pglite') await prepareEmbedded(handle, settings.demoData)
    const user = await findUserForLink(handle.db, normaliseEmail(email))
    const reason = refusal(user)
    if (!user || reason) throw new CommandError(`${email}: ${reason ?? 'no user has this e-mail'}`)
    const now = new Date()
    const path = confirmationPath(user, settings.legacySecretKey, now)
    process.stdout.write(`${settings.publicBaseUrl ?? ''}${path}\n`)
    const validUntil = new Date(now.getTime() + settings.linkTtl * 1000).toISOString()
    process.stderr.write(`valid until ${validUntil}, or until the account is confirmed or its password changes\n`)
  } catch (error) {
    throw describeDatabaseWork(settings, error)
  } finally {
    await handle.db.destroy()
  }
})

import { randomBytes } from 'node:crypto'

/**
 * The secrets every service the tests start runs with, in process or as a process, on PGlite or
 * PostgreSQL: the demo values are the embedded demo's only (src/config.ts refuses them on any
 * DATABASE_URL), and the tests get no way around that rule. Made afresh by each test process, so
 * that no published value exists to be copied into a deployment; at the production minimums.
 */
export const TEST_SECRETS = {
  JWT_SIGNING_KEY: randomBytes(32).toString('hex'),
  LEGACY_SECRET_KEY: randomBytes(32).toString('hex'),
  ESIGN_WEBHOOK_SECRETS: randomBytes(16).toString('hex'),
} as const

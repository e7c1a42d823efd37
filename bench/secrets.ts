import { randomBytes } from 'node:crypto'

/**
 * The secrets of every server a bench run starts, and of the tokens and webhook paths it makes:
 * the demo values are refused on any DATABASE_URL (src/config.ts), so the bench brings its own,
 * made afresh per run (at the production minimums), as an operator would.
 */
export const BENCH_SECRETS = {
  JWT_SIGNING_KEY: randomBytes(32).toString('hex'),
  LEGACY_SECRET_KEY: randomBytes(32).toString('hex'),
  ESIGN_WEBHOOK_SECRETS: randomBytes(16).toString('hex'),
} as const

import type { Migration, MigrationProvider } from 'kysely'
import * as identity from './0001_identity.js'
import * as companyMarketplace from './0002_company_marketplace.js'
import * as webhooks from './0003_webhooks.js'
import * as cheaperKeyChecks from './0004_cheaper_key_checks.js'

/**
 * Migrations are imported, not read from a folder, so that the compiled service and the tests
 * run the same list without file-system lookups. Names are ordered: add new ones at the end.
 */
export const migrations: Record<string, Migration> = {
  '0001_identity': identity,
  '0002_company_marketplace': companyMarketplace,
  '0003_webhooks': webhooks,
  '0004_cheaper_key_checks': cheaperKeyChecks,
}

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
}

import type { Migration, MigrationProvider } from 'kysely'
import * as identity from './0001_identity.js'
import * as companyMarketplace from './0002_company_marketplace.js'
import * as webhooks from './0003_webhooks.js'
import * as cheaperKeyChecks from './0004_cheaper_key_checks.js'
import * as refreshTokenInFamily from './0005_refresh_token_in_family.js'
import * as customerIdsPerRole from './0006_customer_ids_per_role.js'
import * as retention from './0007_retention.js'
import * as refreshReuseGrace from './0008_refresh_reuse_grace.js'
import * as idempotencyKeys from './0009_idempotency_keys.js'
import * as productionMark from './0010_production_mark.js'
import * as idempotencyAnswerWithWork from './0011_idempotency_answer_with_work.js'
import * as solicitationDocumentTypes from './0012_solicitation_document_types.js'
import * as idempotencyKeysCompact from './0013_idempotency_keys_compact.js'
import * as accessRevocationNotices from './0014_access_revocation_notices.js'
import * as kidCutover from './0015_kid_cutover.js'
import * as tokenFamilyRotations from './0016_token_family_rotations.js'

/**
 * Migrations are imported, not read from a folder, so that the compiled service and the tests
 * run the same list without file-system lookups. Names are ordered: add new ones at the end.
 */
export const migrations: Record<string, Migration> = {
  '0001_identity': identity,
  '0002_company_marketplace': companyMarketplace,
  '0003_webhooks': webhooks,
  '0004_cheaper_key_checks': cheaperKeyChecks,
  '0005_refresh_token_in_family': refreshTokenInFamily,
  '0006_customer_ids_per_role': customerIdsPerRole,
  '0007_retention': retention,
  '0008_refresh_reuse_grace': refreshReuseGrace,
  '0009_idempotency_keys': idempotencyKeys,
  '0010_production_mark': productionMark,
  '0011_idempotency_answer_with_work': idempotencyAnswerWithWork,
  '0012_solicitation_document_types': solicitationDocumentTypes,
  '0013_idempotency_keys_compact': idempotencyKeysCompact,
  '0014_access_revocation_notices': accessRevocationNotices,
  '0015_kid_cutover': kidCutover,
  '0016_token_family_rotations': tokenFamilyRotations,
}

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
}

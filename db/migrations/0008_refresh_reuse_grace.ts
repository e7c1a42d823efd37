import { sql, type Kysely } from 'kysely'

/**
 * What a retried refresh needs (route 3, REFRESH_REUSE_GRACE): the jti the last rotation spent, and
 * the issue time and expiry of the successor it made current, so that the same successor can be
 * signed again byte for byte (the claims and key are the same, and HS256, EdDSA and RS256 signing
 * are deterministic) without a usable token ever being stored. Written by the rotation's own
 * UPDATE: no index covers them, so it stays HOT and one statement.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE token_families
      ADD COLUMN previous_refresh_jti text
        CONSTRAINT token_families_previous_refresh_jti_check
        CHECK (octet_length(previous_refresh_jti) = 32 AND previous_refresh_jti !~ '[^0-9a-f]'),
      ADD COLUMN current_refresh_issued_at timestamptz,
      ADD COLUMN current_refresh_expires_at timestamptz`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE token_families
      DROP COLUMN previous_refresh_jti,
      DROP COLUMN current_refresh_issued_at,
      DROP COLUMN current_refresh_expires_at`.execute(db)
}

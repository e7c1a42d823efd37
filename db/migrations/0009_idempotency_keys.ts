import { sql, type Kysely } from 'kysely'

/**
 * `Idempotency-Key` on routes 5, 10 and 11 (src/idempotency/): the first answer to a key, kept
 * 24 h per (scope, route, key) so that a retry replays it.
 *
 * - `scope` is the caller's user id, or on a public route a hash of its path (route 10's link).
 * - The key itself is never stored: `key_hash` is its SHA-256; the key keys the HMAC `fingerprint`
 *   of the request and the encryption of `answer`, so that the table alone tells nothing of a
 *   request's body (route 10's password) nor holds a usable answer (route 10's tokens).
 * - `status` is null while the first request runs.
 * - Rows are inserted in time order and only the retention command reads by age: a BRIN index on
 *   `created_at` finds the old ones for a few pages of index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE idempotency_keys (
      scope text NOT NULL,
      route text NOT NULL,
      key_hash bytea NOT NULL,
      fingerprint bytea NOT NULL,
      status smallint,
      answer bytea,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (scope, route, key_hash)
    )`.execute(db)
  await sql`CREATE INDEX idempotency_keys_created_idx ON idempotency_keys USING brin (created_at)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE idempotency_keys`.execute(db)
}

import { sql, type Kysely } from 'kysely'

/**
 * Compact `idempotency_keys` rows (issue 33): ~860 bytes of heap and ~140 of primary key per kept
 * key became about half (figures in the commit). The table is made anew and the live rows copied:
 *
 * - `key_id`, SHA-256 of (scope, route, key hash) as src/idempotency/repository.ts makes it, is the
 *   primary key, instead of the three columns (the scope and route as text, twice: heap and index).
 *   Nothing reads a row but by its key, and the retention command by `created_at`.
 * - `fingerprint` keeps 16 bytes of the request's HMAC (128 bits, as much as a MAC needs).
 * - `answer` is, from now on, compressed before it is encrypted and no longer JSON in JSON; the
 *   answers kept before stay readable (src/idempotency/key.ts tells them apart).
 * - Fixed-width columns first, so no padding between them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE idempotency_keys_compact (
      created_at timestamptz NOT NULL DEFAULT now(),
      status smallint NOT NULL,
      key_id bytea NOT NULL,
      fingerprint bytea NOT NULL,
      answer bytea NOT NULL,
      CONSTRAINT idempotency_keys_compact_pkey PRIMARY KEY (key_id)
    )`.execute(db)
  await sql`
    INSERT INTO idempotency_keys_compact (created_at, status, key_id, fingerprint, answer)
    SELECT created_at, status,
           sha256(convert_to(scope, 'UTF8') || '\\x00'::bytea || convert_to(route, 'UTF8') || '\\x00'::bytea || key_hash),
           substring(fingerprint FROM 1 FOR 16), answer
      FROM idempotency_keys
     ORDER BY created_at`.execute(db)
  await sql`DROP TABLE idempotency_keys`.execute(db)
  await sql`ALTER TABLE idempotency_keys_compact RENAME TO idempotency_keys`.execute(db)
  await sql`ALTER TABLE idempotency_keys RENAME CONSTRAINT idempotency_keys_compact_pkey TO idempotency_keys_pkey`.execute(db)
  await sql`CREATE INDEX idempotency_keys_created_idx ON idempotency_keys USING brin (created_at)`.execute(db)
}

/** The former layout, empty: a row's scope and route cannot be had back from its digest (keys live 24 h). */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE idempotency_keys`.execute(db)
  await sql`
    CREATE TABLE idempotency_keys (
      scope text NOT NULL,
      route text NOT NULL,
      key_hash bytea NOT NULL,
      fingerprint bytea NOT NULL,
      status smallint NOT NULL,
      answer bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (scope, route, key_hash)
    )`.execute(db)
  await sql`CREATE INDEX idempotency_keys_created_idx ON idempotency_keys USING brin (created_at)`.execute(db)
}

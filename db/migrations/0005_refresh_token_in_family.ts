import { sql, type Kysely } from 'kysely'

/**
 * A token family keeps the jti of its one live refresh token, instead of a row per refresh token in
 * `refresh_tokens`. A rotation (route 3) is then one compare-and-set UPDATE of the family's row, a
 * HOT update since no index covers the column, where it was an UPDATE of the spent token, an INSERT
 * of its successor into two indexes and the foreign key's KEY SHARE lock on the family row: 5.4 WAL
 * records per refresh (bench/RESULTS.md, run 13). `refresh_tokens` also grew by a row per refresh,
 * for good; a family is one row per login.
 *
 * Replays are still recognised: a refresh token is signed only once it is stored as its family's
 * current one, so a token of the family that verifies but is not the current one was spent.
 *
 * Run it with no instance of the previous version serving: those still write `refresh_tokens`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE token_families
      ADD COLUMN current_refresh_jti text
        CONSTRAINT token_families_current_refresh_jti_check
        CHECK (octet_length(current_refresh_jti) = 32 AND current_refresh_jti !~ '[^0-9a-f]')`.execute(db)
  // Every refresh writes a new version of its family's row: leave room for it on the same page, so
  // that the update stays HOT (no new index entries) without waiting for a vacuum.
  await sql`ALTER TABLE token_families SET (fillfactor = 80)`.execute(db)
  // The unspent token of each family stays usable: the sessions of the moment survive the upgrade.
  await sql`
    UPDATE token_families AS family
       SET current_refresh_jti = live.jti
      FROM (SELECT DISTINCT ON (family_id) family_id, jti
              FROM refresh_tokens
             WHERE spent_at IS NULL
             ORDER BY family_id, created_at DESC) AS live
     WHERE live.family_id = family.id`.execute(db)
  await sql`DROP TABLE refresh_tokens`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE refresh_tokens (
      jti text PRIMARY KEY CHECK (octet_length(jti) = 32 AND jti !~ '[^0-9a-f]'),
      family_id uuid NOT NULL REFERENCES token_families (id) ON DELETE CASCADE,
      expires_at timestamptz NOT NULL,
      spent_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
  await sql`CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id)`.execute(db)
  // Each token's own expiry was not kept (its JWT carries it): the family's end is the latest it can be.
  await sql`
    INSERT INTO refresh_tokens (jti, family_id, expires_at)
    SELECT current_refresh_jti, id, absolute_expires_at FROM token_families WHERE current_refresh_jti IS NOT NULL`.execute(db)
  await sql`ALTER TABLE token_families DROP COLUMN current_refresh_jti, RESET (fillfactor)`.execute(db)
}

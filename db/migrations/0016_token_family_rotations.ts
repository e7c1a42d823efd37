import { sql, type Kysely } from 'kysely'

/**
 * The rotating part of a token family in a table of its own (issue 45). Every refresh rewrote its
 * family's row, and every authenticated request reads a family row: the reads walked the dead
 * versions rotation left on the same few pages until a vacuum came by (a third of route 4's
 * throughput, bench/RESULTS.md). `token_families` now changes only when a family is revoked or
 * ended; `token_family_rotations`, which no read path touches, takes a write per refresh. Half of
 * each page is left free so that those updates stay HOT, and autovacuum visits the table after a
 * fixed number of them rather than a fifth of the table.
 *
 * A revocation (any: reuse, logout, the disable and password triggers, an operator's SQL) is copied
 * onto the rotation row by trigger: a rotation running meanwhile waits for that row and then finds
 * nothing to spend, as it did when both lived in one row.
 *
 * Run it with no instance of the previous version serving: those still write the dropped columns.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE token_family_rotations (
      family_id uuid PRIMARY KEY REFERENCES token_families (id) ON DELETE CASCADE,
      current_refresh_issued_at timestamptz,
      current_refresh_expires_at timestamptz,
      current_refresh_jti text CHECK (octet_length(current_refresh_jti) = 32 AND current_refresh_jti !~ '[^0-9a-f]'),
      previous_refresh_jti text CHECK (octet_length(previous_refresh_jti) = 32 AND previous_refresh_jti !~ '[^0-9a-f]'),
      family_revoked_at timestamptz
    ) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000)`.execute(db)
  await sql`
    INSERT INTO token_family_rotations
           (family_id, current_refresh_issued_at, current_refresh_expires_at, current_refresh_jti, previous_refresh_jti, family_revoked_at)
    SELECT id, current_refresh_issued_at, current_refresh_expires_at, current_refresh_jti, previous_refresh_jti, revoked_at
      FROM token_families
     WHERE current_refresh_jti IS NOT NULL OR previous_refresh_jti IS NOT NULL`.execute(db)
  await sql`
    ALTER TABLE token_families
      DROP COLUMN current_refresh_jti,
      DROP COLUMN previous_refresh_jti,
      DROP COLUMN current_refresh_issued_at,
      DROP COLUMN current_refresh_expires_at`.execute(db)
  await sql`
    CREATE FUNCTION end_rotation_on_revocation() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE token_family_rotations SET family_revoked_at = NEW.revoked_at WHERE family_id = NEW.id;
      RETURN NEW;
    END
    $$`.execute(db)
  await sql`
    CREATE TRIGGER token_families_end_rotation
    AFTER UPDATE OF revoked_at ON token_families
    FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
    EXECUTE FUNCTION end_rotation_on_revocation()`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER token_families_end_rotation ON token_families`.execute(db)
  await sql`DROP FUNCTION end_rotation_on_revocation()`.execute(db)
  await sql`
    ALTER TABLE token_families
      ADD COLUMN current_refresh_jti text
        CONSTRAINT token_families_current_refresh_jti_check
        CHECK (octet_length(current_refresh_jti) = 32 AND current_refresh_jti !~ '[^0-9a-f]'),
      ADD COLUMN previous_refresh_jti text
        CONSTRAINT token_families_previous_refresh_jti_check
        CHECK (octet_length(previous_refresh_jti) = 32 AND previous_refresh_jti !~ '[^0-9a-f]'),
      ADD COLUMN current_refresh_issued_at timestamptz,
      ADD COLUMN current_refresh_expires_at timestamptz`.execute(db)
  await sql`
    UPDATE token_families AS family
       SET current_refresh_jti = rotation.current_refresh_jti,
           previous_refresh_jti = rotation.previous_refresh_jti,
           current_refresh_issued_at = rotation.current_refresh_issued_at,
           current_refresh_expires_at = rotation.current_refresh_expires_at
      FROM token_family_rotations AS rotation
     WHERE rotation.family_id = family.id`.execute(db)
  await sql`DROP TABLE token_family_rotations`.execute(db)
}

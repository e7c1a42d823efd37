import { sql, type Kysely } from 'kysely'

/**
 * What the retention command (src/retention/) deletes, found by index, and a smaller write per
 * webhook delivery (issue 17).
 *
 * Indexes are created IF NOT EXISTS, so that an operator may build them CONCURRENTLY beforehand.
 * - A family ends at the earlier of its absolute expiry and its revocation (`least` skips a null):
 *   one index on that end serves the command's batches.
 * - The password-change and disable trigger revokes only the families that can still be used: an
 *   expired family's refresh tokens are refused already, and its last access tokens live minutes,
 *   so a day of margin is plenty. Its index covers exactly those rows, by user.
 * - `webhook_deliveries_envelope_idx` was never read (no statement looks deliveries up by envelope),
 *   and every delivery wrote it. Deliveries arrive in time order, so a BRIN index on `received_at`
 *   finds the old ones for a few pages of index, and does not stop the outcome's update from being
 *   HOT (no indexed column changes). Half of each page is left free: the outcome's update follows
 *   the insert in the same transaction, so the row's two versions must fit on its page together;
 *   the old ones are pruned later, and the table grows little (bench/RESULTS.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS token_families_ended_idx ON token_families (least(absolute_expires_at, revoked_at))`.execute(db)
  await sql`
    CREATE INDEX IF NOT EXISTS token_families_live_user_idx ON token_families (user_id, absolute_expires_at) WHERE revoked_at IS NULL`.execute(db)
  await sql`DROP INDEX IF EXISTS token_families_user_idx`.execute(db)
  await sql`
    CREATE OR REPLACE FUNCTION revoke_token_families_on_user_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF (OLD.is_active AND NOT NEW.is_active)
         OR (NEW.password_changed_at IS DISTINCT FROM OLD.password_changed_at) THEN
        UPDATE token_families
           SET revoked_at = now(),
               revoked_reason = CASE WHEN NEW.is_active THEN 'password_changed' ELSE 'user_disabled' END
         WHERE user_id = NEW.id AND revoked_at IS NULL AND absolute_expires_at > now() - interval '1 day';
      END IF;
      RETURN NEW;
    END
    $$`.execute(db)

  await sql`DROP INDEX IF EXISTS webhook_deliveries_envelope_idx`.execute(db)
  await sql`CREATE INDEX IF NOT EXISTS webhook_deliveries_received_idx ON webhook_deliveries USING brin (received_at)`.execute(db)
  await sql`ALTER TABLE webhook_deliveries SET (fillfactor = 50)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_deliveries RESET (fillfactor)`.execute(db)
  await sql`DROP INDEX webhook_deliveries_received_idx`.execute(db)
  await sql`CREATE INDEX webhook_deliveries_envelope_idx ON webhook_deliveries (envelope_key, occurred_at)`.execute(db)

  await sql`
    CREATE OR REPLACE FUNCTION revoke_token_families_on_user_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF (OLD.is_active AND NOT NEW.is_active)
         OR (NEW.password_changed_at IS DISTINCT FROM OLD.password_changed_at) THEN
        UPDATE token_families
           SET revoked_at = now(),
               revoked_reason = CASE WHEN NEW.is_active THEN 'password_changed' ELSE 'user_disabled' END
         WHERE user_id = NEW.id AND revoked_at IS NULL;
      END IF;
      RETURN NEW;
    END
    $$`.execute(db)
  await sql`CREATE INDEX token_families_user_idx ON token_families (user_id) WHERE revoked_at IS NULL`.execute(db)
  await sql`DROP INDEX token_families_live_user_idx`.execute(db)
  await sql`DROP INDEX token_families_ended_idx`.execute(db)
}

import { sql, type Kysely } from 'kysely'

/**
 * Whoever takes access away (this service, `npm run disable-user`, an operator's SQL, a back office),
 * the users it affects are named on the channel `access_revoked` when it commits: a user disabled or
 * deleted, a token family revoked or deleted while live, a membership changed or removed, a company
 * role or a company deactivated or deleted. Each instance with replicas listens, and reads those
 * users' admissions on the primary until a replica has replayed the change (src/tenancy/replica-reads.ts).
 * NOTIFY is transactional: nothing is said of a change rolled back, and the same user once per transaction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION notify_access_revoked() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
      -- A DELETE removes the row's access; an UPDATE only when it takes some away (NEW is not read on a DELETE).
      removed boolean := TG_OP = 'DELETE';
    BEGIN
      IF TG_TABLE_NAME = 'users' THEN
        IF NOT removed THEN removed := OLD.is_active AND NOT NEW.is_active; END IF;
        IF removed THEN PERFORM pg_notify('access_revoked', OLD.id::text); END IF;
      ELSIF TG_TABLE_NAME = 'token_families' THEN
        -- A live family only: retention deletes expired and revoked ones.
        IF removed THEN removed := OLD.revoked_at IS NULL AND OLD.absolute_expires_at > now();
        ELSE removed := OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL; END IF;
        IF removed THEN PERFORM pg_notify('access_revoked', OLD.user_id::text); END IF;
      ELSIF TG_TABLE_NAME = 'memberships' THEN
        -- Any change: a permission less, another role, inactive (the service never updates one).
        PERFORM pg_notify('access_revoked', OLD.user_id::text);
      ELSIF TG_TABLE_NAME = 'company_roles' THEN
        IF NOT removed THEN removed := (OLD.is_active AND NOT NEW.is_active) OR NEW.company_id IS DISTINCT FROM OLD.company_id; END IF;
        IF removed THEN
          PERFORM pg_notify('access_revoked', m.user_id::text) FROM memberships AS m WHERE m.company_role_id = OLD.id;
        END IF;
      ELSIF TG_TABLE_NAME = 'companies' THEN
        IF NOT removed THEN removed := OLD.is_active AND NOT NEW.is_active; END IF;
        IF removed THEN
          PERFORM pg_notify('access_revoked', m.user_id::text)
             FROM memberships AS m JOIN company_roles AS r ON r.id = m.company_role_id
            WHERE r.company_id = OLD.id;
        END IF;
      END IF;
      RETURN NULL;
    END
    $$`.execute(db)
  for (const table of ['users', 'token_families', 'memberships', 'company_roles', 'companies']) {
    await sql`
      CREATE TRIGGER ${sql.id(`${table}_notify_access_revoked`)}
      AFTER UPDATE OR DELETE ON ${sql.table(table)}
      FOR EACH ROW EXECUTE FUNCTION notify_access_revoked()`.execute(db)
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['users', 'token_families', 'memberships', 'company_roles', 'companies']) {
    await sql`DROP TRIGGER IF EXISTS ${sql.id(`${table}_notify_access_revoked`)} ON ${sql.table(table)}`.execute(db)
  }
  await sql`DROP FUNCTION IF EXISTS notify_access_revoked()`.execute(db)
}

import { sql, type Kysely } from 'kysely'

/** Users, companies, company roles, memberships, and the refresh-token families of §2. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE users (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      email text NOT NULL CHECK (email = lower(btrim(email)) AND email <> ''),
      name text NOT NULL,
      password_hash text NOT NULL,
      is_active boolean NOT NULL DEFAULT true,
      legacy_id integer UNIQUE,
      migration_state text CHECK (migration_state IN ('pending', 'confirmed')),
      last_login timestamptz,
      password_changed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT users_email_key UNIQUE (email)
    )`.execute(db)

  await sql`
    CREATE TABLE companies (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text NOT NULL,
      trade_name text,
      tax_id text NOT NULL UNIQUE CHECK (tax_id ~ '^[0-9A-Z]{12}[0-9]{2}$'),
      is_active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)

  await sql`
    CREATE TABLE company_roles (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      company_id uuid NOT NULL REFERENCES companies (id),
      role text NOT NULL CHECK (role IN ('seller', 'buyer')),
      is_active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT company_roles_company_role_key UNIQUE (company_id, role)
    )`.execute(db)

  await sql`
    CREATE TABLE memberships (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id uuid NOT NULL REFERENCES users (id),
      company_role_id uuid NOT NULL REFERENCES company_roles (id),
      permissions text[] NOT NULL DEFAULT '{}'
        CHECK (permissions <@ ARRAY['documents', 'bank_accounts', 'customers', 'marketplace', 'chat', 'admin']),
      is_active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT memberships_user_role_key UNIQUE (user_id, company_role_id)
    )`.execute(db)
  await sql`CREATE INDEX memberships_company_role_idx ON memberships (company_role_id)`.execute(db)

  await sql`
    CREATE TABLE token_families (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id uuid NOT NULL REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      absolute_expires_at timestamptz NOT NULL,
      revoked_at timestamptz,
      revoked_reason text CHECK (revoked_reason IN ('reuse', 'password_changed', 'user_disabled', 'logout'))
    )`.execute(db)
  await sql`CREATE INDEX token_families_user_idx ON token_families (user_id) WHERE revoked_at IS NULL`.execute(db)

  await sql`
    CREATE TABLE refresh_tokens (
      jti text PRIMARY KEY CHECK (jti ~ '^[0-9a-f]{32}$'),
      family_id uuid NOT NULL REFERENCES token_families (id) ON DELETE CASCADE,
      expires_at timestamptz NOT NULL,
      spent_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
  await sql`CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id)`.execute(db)

  // Whoever disables a user or changes a password (this service, an operator's SQL, a back office),
  // every refresh-token family of that user dies with it (§2, route 3).
  await sql`
    CREATE FUNCTION revoke_token_families_on_user_change() RETURNS trigger
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
  await sql`
    CREATE TRIGGER users_revoke_token_families
    AFTER UPDATE OF is_active, password_changed_at ON users
    FOR EACH ROW EXECUTE FUNCTION revoke_token_families_on_user_change()`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['refresh_tokens', 'token_families', 'memberships', 'company_roles', 'companies', 'users']) {
    await sql`DROP TABLE IF EXISTS ${sql.table(table)}`.execute(db)
  }
  await sql`DROP FUNCTION IF EXISTS revoke_token_families_on_user_change()`.execute(db)
}

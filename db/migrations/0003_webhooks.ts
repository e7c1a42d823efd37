import { sql, type Kysely } from 'kysely'

/** Every e-signature delivery, stored as received before it is answered (route 12). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE webhook_deliveries (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      provider text NOT NULL,
      dedupe_key text NOT NULL CHECK (dedupe_key ~ '^[0-9a-f]{64}$'),
      raw_body bytea NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      event_name text,
      envelope_key text,
      occurred_at timestamptz,
      outcome text CHECK (outcome IN ('applied', 'ignored', 'unmatched')),
      processed_at timestamptz,
      CONSTRAINT webhook_deliveries_dedupe_key UNIQUE (provider, dedupe_key)
    )`.execute(db)
  await sql`CREATE INDEX webhook_deliveries_envelope_idx ON webhook_deliveries (envelope_key, occurred_at)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS webhook_deliveries`.execute(db)
}

import { sql, type Kysely } from 'kysely'

/**
 * The mark of a production database (docs/decisions.md, "Demo data and a production database"):
 * one row, written by `migrate` under NODE_ENV=production or by the production service's start,
 * never removed by the service. `seed` refuses to load the demo users (public passwords) into a
 * marked database unless ALLOW_DEMO_DATA=true says a demo or staging deployment is meant.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE deployment_marks (
      name text PRIMARY KEY CHECK (name IN ('production')),
      marked_by text NOT NULL CHECK (marked_by IN ('migrate', 'service')),
      marked_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE deployment_marks`.execute(db)
}

import { sql } from 'kysely'
import type { Db } from '../../db/types.js'

/**
 * The deployment's kid cut-over (migration 0015 writes it). Read first, so that a start writes
 * nothing (a write would put every streaming replica behind until it replays it); inserted only
 * when the row is missing (deleted by hand).
 */
export async function deploymentKidCutover(db: Db): Promise<Date> {
  const { rows } = await sql<{ cut_over_at: Date | string }>`SELECT cut_over_at FROM kid_cutover`.execute(db)
  if (rows[0]) return new Date(rows[0].cut_over_at)
  const { rows: written } = await sql<{ cut_over_at: Date | string }>`
    WITH inserted AS (INSERT INTO kid_cutover DEFAULT VALUES ON CONFLICT (one) DO NOTHING RETURNING cut_over_at)
    SELECT cut_over_at FROM inserted UNION ALL SELECT cut_over_at FROM kid_cutover
    LIMIT 1`.execute(db)
  return new Date(written[0]!.cut_over_at)
}

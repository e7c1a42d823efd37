import { sql } from 'kysely'
import type { Db } from '../../db/types.js'

/**
 * The deployment's kid cut-over (migration 0015): recorded by the first start that asks, the same
 * for every instance and restart after it. One statement: the row inserted unless present, then read.
 */
export async function deploymentKidCutover(db: Db): Promise<Date> {
  const { rows } = await sql<{ cut_over_at: Date | string }>`
    WITH inserted AS (INSERT INTO kid_cutover DEFAULT VALUES ON CONFLICT (one) DO NOTHING RETURNING cut_over_at)
    SELECT cut_over_at FROM inserted UNION ALL SELECT cut_over_at FROM kid_cutover
    LIMIT 1`.execute(db)
  return new Date(rows[0]!.cut_over_at)
}

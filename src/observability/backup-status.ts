import { sql } from 'kysely'
import type { Db } from '../../db/types.js'

/**
 * What the database knows of its backups (docs/runbook.md, WalArchivingFailing and BackupTooOld):
 * pg_stat_archiver, the server's own count of WAL segments pushed by archive_command and of failed
 * pushes, and backup.runs, one row per backup that deploy/pgbackrest/backup.sh saw finish (the
 * table is the backup job's: absent until its first run). Times are Unix seconds, null when never.
 */
export interface BackupStatus {
  archivedCount: number
  failedCount: number
  lastArchivedAt: number | null
  lastFailedAt: number | null
  lastBackupAt: number | null
}

export async function readBackupStatus(db: Db): Promise<BackupStatus> {
  const { rows } = await sql<{
    archived_count: string
    failed_count: string
    last_archived_at: number | null
    last_failed_at: number | null
    has_runs: boolean
  }>`
    SELECT archived_count, failed_count,
           extract(epoch FROM last_archived_time)::float8 AS last_archived_at,
           extract(epoch FROM last_failed_time)::float8 AS last_failed_at,
           to_regclass('backup.runs') IS NOT NULL AS has_runs
      FROM pg_stat_archiver`.execute(db)
  const row = rows[0]!
  const runs = row.has_runs
    ? (await sql<{ last: number | null }>`SELECT extract(epoch FROM max(stopped_at))::float8 AS last FROM backup.runs`.execute(db)).rows[0]!.last
    : null
  return {
    archivedCount: Number(row.archived_count),
    failedCount: Number(row.failed_count),
    lastArchivedAt: row.last_archived_at,
    lastFailedAt: row.last_failed_at,
    lastBackupAt: runs,
  }
}

#!/usr/bin/env bash
# backup.sh full|diff|incr: one pgBackRest backup of the primary, then its record in the service's
# database (table backup.runs), which every instance exports as db_backup_last_success_timestamp_seconds
# (the BackupTooOld alert). On a standby it does nothing, so the same cron line runs on every node:
#   0 1 * * 0   postgres  /etc/pgbackrest/backup.sh full
#   0 1 * * 1-6 postgres  /etc/pgbackrest/backup.sh diff
# BACKUP_RECORD_DATABASE: the service's database (default receivables); psql's PG* variables reach it.
set -euo pipefail
type=${1:?usage: backup.sh full|diff|incr}
database=${BACKUP_RECORD_DATABASE:-receivables}
stanza=${PGBACKREST_STANZA:-receivables}
psql_() { psql -X -q -v ON_ERROR_STOP=1 -d "$database" "$@"; }

if [ "$(psql_ -Atc 'SELECT pg_is_in_recovery()')" = t ]; then
  echo "backup.sh: a standby; the primary takes the backups" >&2
  exit 0
fi
started=$(date -u +%FT%TZ)
pgbackrest --stanza="$stanza" --type="$type" backup
# The newest backup, as the repository itself describes it (what a restore would use).
newest=$(pgbackrest --stanza="$stanza" --output=json info | jq -c '.[0].backup[-1] | {label: .label, type: .type, start: .timestamp.start, stop: .timestamp.stop, size: .info.size, repo_size: .info.repository.delta}')
psql_ -v newest="$newest" <<'SQL'
CREATE SCHEMA IF NOT EXISTS backup;
CREATE TABLE IF NOT EXISTS backup.runs (
  label text PRIMARY KEY,
  type text NOT NULL,
  started_at timestamptz NOT NULL,
  stopped_at timestamptz NOT NULL,
  size_bytes bigint NOT NULL,
  repo_size_bytes bigint NOT NULL
);
GRANT USAGE ON SCHEMA backup TO PUBLIC;
GRANT SELECT ON backup.runs TO PUBLIC;
INSERT INTO backup.runs
SELECT b->>'label', b->>'type', to_timestamp((b->>'start')::bigint), to_timestamp((b->>'stop')::bigint),
       (b->>'size')::bigint, (b->>'repo_size')::bigint
  FROM (SELECT :'newest'::jsonb AS b) AS newest
ON CONFLICT (label) DO NOTHING;
-- A year of records is plenty for the dashboards; the repository keeps the backups themselves.
DELETE FROM backup.runs WHERE stopped_at < now() - interval '400 days';
SQL
echo "backup.sh: $type backup done (started $started): $newest"

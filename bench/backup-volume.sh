#!/usr/bin/env bash
# bench/backup-volume.sh FACTOR: the figures of docs/operations.md, "Backups and point-in-time recovery": a primary archiving to
# pgBackRest as deploy/pgbackrest/ ships it, loaded with db/seed/volume.ts at FACTOR (1: production,
# about 8 GB), then a full backup by backup.sh (time, size), the cluster lost, restore.sh to the end
# of the archive, PostgreSQL started and the service's first 2xx (a demo login): the RTO. Run as root
# (the servers as postgres) from the checkout, on Node 24, with pgbackrest and PostgreSQL 15.
set -euo pipefail
factor=${1:?usage: bench/backup-volume.sh FACTOR}
bin=/usr/lib/postgresql/15/bin
root=$(mktemp -d /tmp/backup-volume-XXXX)
port=$((20000 + RANDOM % 10000)) service_port=$((30000 + RANDOM % 10000))
mkdir -p "$root"/{repo,spool,log,lock} && chown -R postgres "$root"
cp deploy/pgbackrest/pgbackrest.conf "$root/" && chmod 644 "$root/pgbackrest.conf"
export PGBACKREST_CONFIG=$root/pgbackrest.conf PGBACKREST_REPO1_PATH=$root/repo PGBACKREST_SPOOL_PATH=$root/spool \
  PGBACKREST_LOG_PATH=$root/log PGBACKREST_LOCK_PATH=$root/lock PGBACKREST_PG1_PATH=$root/data PGBACKREST_PG1_PORT=$port \
  PGBACKREST_PG1_SOCKET_PATH=$root PGBACKREST_REPO1_CIPHER_PASS=$(openssl rand -base64 24)
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
now() { date +%s.%N; }
cleanup() { as_pg $bin/pg_ctl -D "$root/data" stop -m immediate >/dev/null 2>&1 || true; as_pg $bin/pg_ctl -D "$root/restored" stop -m immediate >/dev/null 2>&1 || true; [ -n "${service:-}" ] && kill "$service" 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT

as_pg $bin/initdb -D "$root/data" -U postgres --auth=trust --no-sync -E UTF8 --data-checksums >/dev/null
cat >>"$root/data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$root'
archive_mode = on
archive_command = 'pgbackrest --stanza=receivables archive-push "%p"'
archive_timeout = 60s
max_wal_size = 4GB
CONF
as_pg $bin/pg_ctl -D "$root/data" -l "$root/data.log" -w start >/dev/null
as_pg pgbackrest --stanza=receivables stanza-create
url=postgres://postgres@127.0.0.1:$port/receivables
node --import tsx bench/volume.ts "$url" "$factor" | tail -n 1
size=$(psql -X -Atc "SELECT pg_database_size('receivables')" "$url")
started=$(now)
PGHOST=$root PGPORT=$port PGUSER=postgres as_pg bash deploy/pgbackrest/backup.sh full >/dev/null
backup_s=$(echo "$(now) - $started" | bc)
stored=$(as_pg pgbackrest --stanza=receivables --output=json info | jq '.[0].backup[-1].info.repository.delta')
as_pg $bin/pg_ctl -D "$root/data" stop -m immediate >/dev/null
rm -rf "$root/data"

started=$(now)
as_pg bash deploy/pgbackrest/restore.sh latest "$root/restored" 2>/dev/null
restore_s=$(echo "$(now) - $started" | bc)
echo "port = $port" >>"$root/restored/postgresql.conf"
as_pg $bin/pg_ctl -D "$root/restored" -l "$root/restored.log" -w -t 600 start >/dev/null
until [ "$(psql -X -Atc 'SELECT pg_is_in_recovery()' "$url" 2>/dev/null)" = f ]; do sleep 0.2; done
postgres_s=$(echo "$(now) - $started" | bc)
env -i PATH="$PATH" DATABASE_URL="$url" PORT=$service_port HOST=127.0.0.1 LOG_LEVEL=warn METRICS_PORT=0 \
  JWT_SIGNING_KEY="$(openssl rand -hex 32)" LEGACY_SECRET_KEY="$(openssl rand -hex 32)" ESIGN_WEBHOOK_SECRETS="$(openssl rand -hex 16)" \
  node --import tsx src/server.ts >"$root/service.log" 2>&1 &
service=$!
until curl -fsS -o /dev/null -H 'content-type: application/json' -d '{"email":"alice@acme.example","password":"'"$(node --import tsx -e 'import("./db/seed/demo.ts").then((m) => console.log(m.DEMO_PASSWORD))')"'"}' \
  "http://127.0.0.1:$service_port/api/auth/v1/token" 2>/dev/null; do sleep 0.2; done
rto_s=$(echo "$(now) - $started" | bc)
gb=$(echo "scale=3; $size / 1073741824" | bc)
printf 'factor %s: database %.2f GB; full backup %.0f s, %.0f MB in the repository; restore %.0f s (%.1f s per GB), PostgreSQL promoted after %.0f s, first 2xx after %.0f s (RTO); load average %s\n' \
  "$factor" "$gb" "$backup_s" "$(echo "$stored / 1048576" | bc)" "$restore_s" "$(echo "scale=2; $restore_s / $gb" | bc)" "$postgres_s" "$rto_s" "$(cut -d' ' -f1-3 /proc/loadavg)"

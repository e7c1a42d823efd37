#!/bin/sh
# Writes PgBouncer's user list from DB_USER and DB_PASSWORD (kept out of the image), then runs it in
# the foreground. PgBouncer logs in to PostgreSQL with this password (SCRAM) and checks its clients'
# against it. The auth_file's format writes a double quote twice.
set -eu
quote() { printf '"%s"' "$(printf %s "$1" | sed 's/"/""/g')"; }
umask 077
printf '%s %s\n' "$(quote "$DB_USER")" "$(quote "$DB_PASSWORD")" > /tmp/userlist.txt
exec pgbouncer /etc/pgbouncer/pgbouncer.ini

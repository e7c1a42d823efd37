#!/usr/bin/env bash
# restore.sh TARGET NEW_DATA_DIR [pgbackrest restore options…]: restores the repository into a new,
# empty data directory, to TARGET: `latest` (the end of the archived WAL), a time
# ('2026-12-04 02:31:05+00'), or `name:<restore point>` (pg_create_restore_point). A time outside
# what the repository can restore (before its oldest backup ended, after its newest archived WAL) is
# refused with that window, before anything is written. The new cluster starts promoted, with
# archive_mode off: it archives into the repository only once it is the primary (docs/runbook.md,
# "Restoring to a point in time").
set -euo pipefail
usage="usage: restore.sh latest|'YYYY-MM-DD HH:MM:SS+00'|name:<restore point> NEW_DATA_DIR [pgbackrest options]"
target=${1:?$usage}
dir=${2:?$usage}
shift 2
stanza=${PGBACKREST_STANZA:-receivables}
refuse() { echo "restore.sh: $*; nothing was restored" >&2; exit 2; }
stamp() { date -u -d "@$1" '+%F %T+00'; }

if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then refuse "$dir is not empty: restore into a new data directory"; fi

passphrase="repo1-cipher-pass (/etc/pgbackrest/conf.d/secrets.conf, or PGBACKREST_REPO1_CIPHER_PASS)"
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
info=$(pgbackrest --stanza="$stanza" --output=json info 2>"$errors") || {
  grep -q 'requires option: repo1-cipher-pass' "$errors" && refuse "the repository's passphrase is not set: $passphrase"
  refuse "the repository cannot be read: $(head -n 1 "$errors")"
}
# A wrong passphrase decrypts the repository's files to noise: pgBackRest names a FormatError.
if ! status=$(jq -r '.[0].status.code' <<<"$info" 2>/dev/null) || [ "$status" != 0 ]; then
  grep -q FormatError <<<"$info" && refuse "the repository does not decrypt: $passphrase is wrong"
  refuse "the repository is not usable: $(jq -r '.[0].status.message' <<<"$info" 2>/dev/null || head -c 300 <<<"$info")"
fi
oldest=$(jq -r '[.[0].backup[].timestamp.stop] | min // empty' <<<"$info")
[ -n "$oldest" ] || refuse "the repository holds no backup yet"
# When the newest WAL segment was pushed: nothing later was archived.
newest=$(pgbackrest --stanza="$stanza" --output=json --recurse repo-ls "archive/$stanza" |
  jq -r '[to_entries[] | select(.key | test("/[0-9A-F]{24}-[0-9a-f]+(\\.[a-z0-9]+)?$")) | .value.time] | max // empty')
window="the repository restores from $(stamp "$oldest") to $(stamp "${newest:-$oldest}")"

case "$target" in
  latest) options=(--type=default) ;;
  name:*) options=(--type=name "--target=${target#name:}" --target-action=promote) ;;
  *)
    at=$(date -u -d "$target" +%s 2>/dev/null) || refuse "'$target' is not a time, latest or name:<restore point>"
    if [ "$at" -lt "$oldest" ] || [ "$at" -gt "${newest:-$oldest}" ]; then refuse "$target is outside the window: $window"; fi
    options=(--type=time "--target=$target" --target-action=promote)
    ;;
esac
echo "restore.sh: $window; restoring to $target into $dir" >&2
# Promoted at the target; no archiving until it is cut over to (its WAL would mix with the live primary's).
pgbackrest --stanza="$stanza" --pg1-path="$dir" "${options[@]}" --archive-mode=off "$@" restore

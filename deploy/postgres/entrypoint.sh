#!/bin/sh
# PostgreSQL for the compose file's tests, configured like the official image: POSTGRES_USER (default postgres),
# POSTGRES_DB (default: the user's name), POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE (required); the cluster is
# made in PGDATA on the first start; connections over the network need the password (scram-sha-256).
set -eu
bin=/usr/lib/postgresql/15/bin
data="${PGDATA:-/var/lib/postgresql/data}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
password="${POSTGRES_PASSWORD:-}"
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then password="$(cat "$POSTGRES_PASSWORD_FILE")"; fi
if [ ! -s "$data/PG_VERSION" ]; then
  [ -n "$password" ] || { echo "entrypoint: POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE is required" >&2; exit 1; }
  pwfile="$(mktemp)"
  printf '%s\n' "$password" >"$pwfile"
  "$bin/initdb" -D "$data" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$data/pg_hba.conf"
  if [ "$db" != postgres ]; then
    "$bin/pg_ctl" -D "$data" -o "-c listen_addresses=''" -w start >/dev/null
    "$bin/createdb" -h /var/run/postgresql -U "$user" "$db"
    "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  fi
  echo "entrypoint: made the cluster in $data (user $user, database $db)" >&2
fi
exec "$bin/postgres" -D "$data" -c listen_addresses='*'

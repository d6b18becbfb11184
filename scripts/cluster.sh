#!/usr/bin/env bash
# Three instances of the service on this machine, sharing one PostgreSQL database and one workspace root:
#   npm run cluster -- --mock-model
# Instances listen on 127.0.0.1:9001, :9002 and :9003 (put any load balancer in front, no sticky sessions needed);
# each has its own data directory (.data/cluster/<n>: engine state), all share .data/cluster/workspace and the
# uploaded files' directory .data/cluster/files.
# DATABASE_URL defaults to postgres://postgres@127.0.0.1:5432/codex_agent_api (created when missing).
# Extra arguments go to every instance (e.g. --mock-model, --token …). Ctrl-C stops all three.
set -euo pipefail
cd "$(dirname "$0")/.."

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/codex_agent_api}"
node --input-type=module -e '
  import pg from "pg";
  const url = new URL(process.env.DATABASE_URL);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = "/postgres";
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  const found = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
  if (found.rowCount === 0) await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  await c.end();
' 2>&1 || { echo "cannot reach PostgreSQL at ${DATABASE_URL%%@*}@…: start it first" >&2; exit 1; }

npm run build --silent
mkdir -p .data/cluster/workspace .data/cluster/files
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait' EXIT INT TERM
for i in 1 2 3; do
  node packages/server/dist/cli.js serve --port "900$i" --data-dir ".data/cluster/$i" \
    --workspace .data/cluster/workspace --file-dir .data/cluster/files "$@" &
  pids+=($!)
done
echo "instances: http://127.0.0.1:9001 http://127.0.0.1:9002 http://127.0.0.1:9003 (database ${DATABASE_URL##*/})"
wait

#!/usr/bin/env bash
# Builds every package from clean and packs the published ones: one .tgz each in OUTDIR (printed, one per line).
# Installing them all at once in an empty directory gives the service with its `codex-agent-api` command:
#   npm install --omit=dev OUTDIR/*.tgz && npx codex-agent-api serve --mock-model
#
# Usage: scripts/pack.sh [--built] OUTDIR     (--built: pack the tree as it is built now, e.g. in the tests, which
#                                              built it first; without it, everything is built again from clean)
set -euo pipefail
cd "$(dirname "$0")/.."

built=0
if [ "${1:-}" = --built ]; then built=1; shift; fi
out="${1:?usage: scripts/pack.sh [--built] OUTDIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The published packages, in dependency order (the service is `codex-agent-api`, from packages/server).
packages=(codex mock-model egress sandbox console server)

# From clean: a dist keeps the output of a source file that is gone, and `files: ["dist"]` would ship it.
if [ "$built" = 0 ]; then
  npx tsc -b --clean
  rm -rf packages/console/dist
  npm run build >/dev/null
fi

args=()
for p in "${packages[@]}"; do args+=(--workspace "packages/$p"); done
npm pack "${args[@]}" --pack-destination "$out" --json |
  node -e 'for (const p of JSON.parse(require("fs").readFileSync(0, "utf8"))) console.log(p.filename)' |
  sed "s#^#$out/#"

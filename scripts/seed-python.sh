#!/usr/bin/env bash
# Prints the path of a Python that can run the seed e2e suite (needs httpx >= 0.24: older httpx keeps the "\n"
# on iter_lines(), so the suite's SSE parser never sees a blank line). Creates a venv under node_modules/.cache
# on first use (pip, with whatever package index the machine is configured for).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/node_modules/.cache/seed-python"
ok() { "$1" -c 'import httpx,sys; v=tuple(int(x) for x in httpx.__version__.split(".")[:2]); sys.exit(0 if v>=(0,24) else 1)' 2>/dev/null; }
if [ -x "$venv/bin/python" ] && ok "$venv/bin/python"; then echo "$venv/bin/python"; exit 0; fi
py=$(command -v python3 || echo /usr/bin/python3)
rm -rf "$venv"
"$py" -m venv "$venv" >&2
"$venv/bin/pip" install -q --disable-pip-version-check --retries 0 --timeout 10 "httpx==0.28.1" >&2
ok "$venv/bin/python" || { echo "could not provide httpx>=0.24 for the seed suite" >&2; exit 1; }
echo "$venv/bin/python"

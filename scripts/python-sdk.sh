#!/usr/bin/env bash
# Prints the path of a Python that has the official openai Python SDK and the test tools for
# packages/server/test/python (pytest). Creates the venv under node_modules/.cache/python-sdk on first use, or
# again when the pinned set below changes, with pip and whatever package index the machine is configured for.
# Fails with a clear message when pip cannot install a pinned package: the suite is never skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/node_modules/.cache"
venv="$cache/python-sdk"
# openai 3.22.1 talks through httpx2; httpx-sse (the spec-following SSE parser of the tests) needs httpx.
pins=(openai==3.22.1 pydantic==2.13.5 httpx==0.28.1 httpx-sse==0.4.3 pytest==9.1.1 pytest-asyncio==1.4.0 pytest-timeout==2.4.0)
stamp="${pins[*]}"
mkdir -p "$cache"
exec 9>"$cache/python-sdk.lock"
flock 9
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.pins" 2>/dev/null)" = "$stamp" ]; then
  echo "$venv/bin/python"
  exit 0
fi
py=$(command -v python3 || true)
[ -n "$py" ] || { echo "python-sdk.sh: python3 is not installed (the openai Python SDK tests need it)" >&2; exit 1; }
rm -rf "$venv"
"$py" -m venv "$venv" >&2 || { echo "python-sdk.sh: '$py -m venv' failed (is python3-venv installed?)" >&2; exit 1; }
if ! "$venv/bin/pip" install -q --disable-pip-version-check --retries 0 --timeout 10 "${pins[@]}" >&2; then
  rm -rf "$venv"
  echo "python-sdk.sh: pip could not install ${pins[*]} from this machine's package index" \
    "(pip config: $(pip3 config list 2>/dev/null | tr '\n' ' '))" >&2
  exit 1
fi
echo "$stamp" >"$venv/.pins"
echo "$venv/bin/python"

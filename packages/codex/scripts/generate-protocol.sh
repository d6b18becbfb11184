#!/usr/bin/env bash
# Regenerates the app-server protocol types from the pinned Codex binary.
# Run after moving the @openai/codex pin: bash packages/codex/scripts/generate-protocol.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(node -e 'import("'"$here"'/dist/binary.js").then(m => console.log(m.resolveCodexBinary()))' 2>/dev/null || true)
if [ -z "$bin" ]; then
  bin=$(find "$here/../../node_modules/@openai" -path '*/vendor/*/bin/codex' -type f | head -n 1)
fi
out="$here/src/generated"
rm -rf "$out"
"$bin" app-server generate-ts --out "$out"
# The generator writes extension-less relative imports; NodeNext resolution wants ".js".
find "$out" -name '*.ts' -print0 | xargs -0 sed -i -E 's#(from "\.{1,2}/[^"]+)";#\1.js";#'
sed -i 's#from "./v2.js"#from "./v2/index.js"#' "$out/index.ts"
echo "generated $(find "$out" -name '*.ts' | wc -l) files from $("$bin" --version)"

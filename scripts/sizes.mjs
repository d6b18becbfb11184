#!/usr/bin/env node
// `npm run sizes`: source files of packages/*/src over the line budget (500; generated code aside), longest first.
// `--fail` (as `npm test` runs it) makes any of them an error; without it, a warning.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const MAX_LINES = 500;
const root = fileURLToPath(new URL("..", import.meta.url));
const fail = process.argv.includes("--fail");

const over = [];
for (const pkg of readdirSync(join(root, "packages"))) {
  const src = join(root, "packages", pkg, "src");
  let entries;
  try {
    entries = readdirSync(src, { recursive: true, withFileTypes: true });
  } catch {
    continue;
  }
  for (const e of entries) {
    if (!e.isFile() || !/\.(ts|tsx|js|mjs|cjs)$/.test(e.name)) continue;
    const path = join(e.parentPath, e.name);
    const rel = relative(root, path);
    if (/(^|\/)(generated|node_modules)\//.test(rel)) continue;
    const text = readFileSync(path, "utf8");
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    if (lines > MAX_LINES) over.push({ rel, lines });
  }
}
over.sort((a, b) => b.lines - a.lines || a.rel.localeCompare(b.rel));
if (over.length === 0) {
  console.log(`sizes: no source file over ${MAX_LINES} lines`);
} else {
  const say = fail ? console.error : console.warn;
  say(`sizes: ${over.length} source file(s) over ${MAX_LINES} lines${fail ? "" : " (a warning for now)"}:`);
  for (const { rel, lines } of over) say(`  ${String(lines).padStart(5)}  ${rel}`);
}
process.exit(fail && over.length > 0 ? 1 : 0);

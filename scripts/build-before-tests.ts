// vitest global setup: the repository's incremental build (scripts/build.mjs: every package, then the web console
// when its sources are newer than its build), so tests that start the CLI (`packages/server/dist/cli.js`) or load
// the console never run a stale build.
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

export default function setup(): void {
  execFileSync(process.execPath, [join(root, "scripts/build.mjs")], { cwd: root, stdio: "inherit" });
}

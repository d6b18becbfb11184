// vitest global setup: builds every package first (incremental, fast when nothing changed), so tests that start
// the CLI (`packages/server/dist/cli.js`) never run a stale build.
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export default function setup(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b"], {
    cwd: root,
    stdio: "inherit",
  });
}

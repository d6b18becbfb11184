// vitest global setup: builds every package first (incremental, fast when nothing changed), so tests that start
// the CLI (`packages/server/dist/cli.js`) never run a stale build; then the web console (packages/console/dist,
// which the service serves at /console and its browser tests load) when its sources are newer than its build.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The newest modification time among the console's build inputs. */
function newestConsoleSource(dir: string): number {
  const inputs = ["index.html", "vite.config.ts", "package.json", "tsconfig.json"].map((f) => join(dir, f));
  for (const entry of readdirSync(join(dir, "src"), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) inputs.push(join(entry.parentPath, entry.name));
  }
  return Math.max(...inputs.filter((f) => existsSync(f)).map((f) => statSync(f).mtimeMs));
}

function buildConsoleIfStale(): void {
  const dir = join(root, "packages/console");
  const built = join(dir, "dist/index.html");
  if (existsSync(built) && statSync(built).mtimeMs >= newestConsoleSource(dir)) return;
  // vitest sets NODE_ENV=test, which would give a development build of React.
  execFileSync("npm", ["run", "build", "-w", "@codex-agent-api/console"], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, NODE_ENV: "production" },
  });
}

export default function setup(): void {
  execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b"], {
    cwd: root,
    stdio: "inherit",
  });
  buildConsoleIfStale();
}

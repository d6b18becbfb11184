// The repository's build, incremental: the TypeScript packages (`tsc -b`: nothing to do when every output is newer
// than its inputs) and the web console (a Vite build, run only when a source of it is newer than its build).
// `npm run build`, `npm start` and the tests' global setup run it; scripts/pack.sh builds from clean.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The newest modification time among the console's build inputs. */
function newestConsoleSource(dir) {
  const inputs = ["index.html", "vite.config.ts", "package.json", "tsconfig.json"].map((f) => join(dir, f));
  for (const entry of readdirSync(join(dir, "src"), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) inputs.push(join(entry.parentPath, entry.name));
  }
  return Math.max(...inputs.filter((f) => existsSync(f)).map((f) => statSync(f).mtimeMs));
}

function buildConsoleIfStale() {
  const dir = join(root, "packages/console");
  const built = join(dir, "dist/index.html");
  if (existsSync(built) && statSync(built).mtimeMs >= newestConsoleSource(dir)) return;
  // Under vitest NODE_ENV is "test", which would give a development build of React.
  execFileSync("npm", ["run", "build", "-w", "@codex-agent-api/console"], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, NODE_ENV: "production" },
  });
}

execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b"], {
  cwd: root,
  stdio: "inherit",
});
buildConsoleIfStale();

// Setup of the vitest `unit` project (vitest.config.ts): a unit test starts no process. Every way to start one is
// replaced, in the unit project's workers only, by a function that throws, so a test that needs a process (the
// engine, the CLI, git, PostgreSQL, a browser) fails at once saying where it belongs.
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";

const STARTERS = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const;

function refuse(name: string) {
  return () => {
    throw new Error(
      `a unit test starts no process (child_process.${name}): name the file *.engine.test.ts ` +
        "(or *.external.test.ts when it needs PostgreSQL, Python or Chromium)",
    );
  };
}

Object.assign(childProcess, Object.fromEntries(STARTERS.map((name) => [name, refuse(name)])));
// Named imports (`import { spawn } from "node:child_process"`) see the replacements too.
syncBuiltinESMExports();

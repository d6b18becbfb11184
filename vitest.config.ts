import { existsSync, statfsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

/** Free bytes on a tmpfs mount, or 0 when there is none. */
function ramDiskFree(dir: string): number {
  if (!existsSync(dir)) return 0;
  const fs = statfsSync(dir);
  return fs.type === 0x01021994 ? fs.bavail * fs.bsize : 0;
}

export default defineConfig({
  resolve: {
    alias: {
      "@codex-agent-api/mock-model": src("mock-model"),
      "@codex-agent-api/testkit": src("testkit"),
      "@codex-agent-api/codex": src("codex"),
      "@codex-agent-api/sandbox": src("sandbox"),
    },
  },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    globalSetup: ["./scripts/build-before-tests.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Test files share a worker process (and its loaded modules) instead of a fresh one each: no suite here relies
    // on module state of its own (the server is built per fixture). Three workers on two cores: much of a test's
    // time is spent waiting on engine and model processes.
    pool: "forks",
    isolate: false,
    maxWorkers: 3,
    // Scratch data (data dirs, workspaces, engine homes) on a RAM disk where the machine has a roomy one.
    ...(ramDiskFree("/dev/shm") >= 2 ** 30 ? { env: { TMPDIR: "/dev/shm" } } : {}),
  },
});

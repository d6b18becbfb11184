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

// Three projects, told apart by the test file's name (README "Tests"):
//   unit      *.test.ts           in-process only: no child process (scripts/unit-guard.ts refuses them), no engine,
//                                 no PostgreSQL; imports the sources, so it needs no build.
//   engine    *.engine.test.ts    starts processes: the real engine against the mock model, the CLI, git.
//   external  *.external.test.ts  needs what is outside the repository: PostgreSQL, Python, Chromium.
const TESTS = "packages/*/test/**/";
const CONTAINER_SUITES = [
  "packages/server/test/main/isolation.engine.test.ts",
  "packages/server/test/dialects/openai/environments.engine.test.ts",
  "packages/server/test/dialects/shared/checkpoints.engine.test.ts",
  "packages/server/test/domain/tools.engine.test.ts",
  "packages/server/test/domain/repositories/repositories.engine.test.ts",
  "packages/server/test/seed/seed-e2e.external.test.ts",
  "packages/server/test/sdk/python.external.test.ts",
];
export default defineConfig({
  resolve: {
    alias: {
      "@codex-agent-api/mock-model": src("mock-model"),
      "@codex-agent-api/testkit": src("testkit"),
      "@codex-agent-api/codex": src("codex"),
      "@codex-agent-api/sandbox": src("sandbox"),
      "@codex-agent-api/egress": src("egress"),
    },
  },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Test files share a worker (and its loaded modules) instead of a fresh one each: no suite here relies on module
    // state of its own (the server is built per fixture). Three workers on two cores for the whole run, whichever
    // project they serve: much of an engine test's time is spent waiting on engine and model processes.
    isolate: false,
    maxWorkers: 3,
    // Scratch data (data dirs, workspaces, engine homes) on a RAM disk where the machine has a roomy one.
    ...(ramDiskFree("/dev/shm") >= 2 ** 30 ? { env: { TMPDIR: "/dev/shm" } } : {}),
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: [`${TESTS}*.test.ts`],
          exclude: ["**/node_modules/**", "**/*.engine.test.ts", "**/*.external.test.ts"],
          pool: "threads",
          setupFiles: ["./scripts/unit-guard.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "engine",
          include: [`${TESTS}*.engine.test.ts`],
          pool: "forks",
          // Builds every package first (tests run packages/server/dist/cli.js and the testkit's built MCP server).
          globalSetup: ["./scripts/build-before-tests.ts"],
        },
      },
      {
        // The suites that exercise the agent, again with every session in a container (--sandbox-backend
        // container; the support code reads TEST_SANDBOX_BACKEND): what they assert holds on both backends, or is
        // asserted for each.
        extends: true,
        test: {
          name: "container",
          include: CONTAINER_SUITES,
          pool: "forks",
          env: { TEST_SANDBOX_BACKEND: "container" },
          globalSetup: ["./scripts/build-before-tests.ts", "./scripts/container-suites.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "external",
          include: [`${TESTS}*.external.test.ts`],
          pool: "forks",
          globalSetup: ["./scripts/build-before-tests.ts"],
        },
      },
    ],
  },
});

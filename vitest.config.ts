import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: {
      "@codex-agent-api/mock-model": src("mock-model"),
      "@codex-agent-api/testkit": src("testkit"),
      "@codex-agent-api/codex": src("codex"),
    },
  },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    globalSetup: ["./scripts/build-before-tests.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
  },
});

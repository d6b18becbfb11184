// Runs the seed end-to-end suite (shared/seeds/codex-agent-api/e2e_test.py) unmodified against the server
// started the way a user would: the CLI with --mock-model.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type CliServer, startCliServer } from "../support/cli-process.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const seed = resolve(root, "../shared/seeds/codex-agent-api/e2e_test.py");

let server: CliServer;
let dataDir: string;
let base: string;

beforeAll(async () => {
  expect(existsSync(seed), `seed suite not found at ${seed}`).toBe(true);
  dataDir = mkdtempSync(join(tmpdir(), "cas-seed-"));
  server = await startCliServer(dataDir);
  base = server.url;
}, 60_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  // (nothing was made when the seed suite is missing: the failure says so, not this teardown)
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

it("passes the seed e2e suite: 15/15 endpoints, no skip, live tail branch", async () => {
  const python = execFileSync("bash", [join(root, "scripts/seed-python.sh")], { encoding: "utf8" }).trim();
  const codexBin = join(root, "node_modules/.bin");
  const child = spawn(python, [seed], {
    env: {
      ...process.env,
      E2E_BASE_URL: base,
      E2E_WORKSPACE: join(dataDir, "workspace"),
      E2E_SSE_TIMEOUT: "90",
      OPENAI_API_KEY: process.env.OPENAI_API_KEY || "dummy-key-for-the-seed-suite",
      PATH: `${codexBin}:${process.env.PATH}`,
    },
  });
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  child.stderr.on("data", (d) => {
    out += d;
  });
  const code = await new Promise<number | null>((r) => child.on("exit", r));
  expect(out, out).toContain("Endpoints : 15/15 passed");
  expect(out).toMatch(/Test cases : \d+ passed, 0 failed, 0 skipped/);
  expect(out).toContain("live branch: subscribed in_progress");
  expect(out).not.toContain("[SKIP]");
  expect(code).toBe(0);
}, 240_000);

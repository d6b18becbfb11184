// The official openai Python SDK (3.22.1), unchanged, against the server started the way a user runs it (the CLI):
// runs the pytest suite in test/sdk/python/ in a venv made by scripts/python-sdk.sh. The model is the scripted mock,
// outside the server (the suite needs a turn that fails: a message containing FAIL_THIS_TURN makes every model
// request of that turn fail). Keep-alives every 200 ms, so a command that sleeps 1.5 s outlasts several.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MockResponsesServer, scriptedModel, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type CliServer, repoRoot, startCliServer } from "../support/cli-process.js";
import { cleanup } from "../support/fixture.js";

const suite = join(repoRoot, "packages/server/test/sdk/python");
/** A guard against a hung run, not a speed limit: under heavy load the 54 tests took 115 s on this kind of machine. */
const PYTEST_TIMEOUT_MS = 300_000;

let dir: string;
let mock: MockResponsesServer;
let server: CliServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cas-python-sdk-"));
  const model = scriptedModel();
  mock = await MockResponsesServer.start({
    capture: 0,
    fallback: (req) =>
      (req.lastUserText() ?? "").includes("FAIL_THIS_TURN") ? scripts.failure("the model broke") : model(req),
  });
  server = await startCliServer(
    join(dir, "data"),
    // (test_repositories.py starts a session from a repository that is a path on this machine)
    ["--allow-local-repositories"],
    { AGENT_SSE_KEEPALIVE_MS: "200" },
    { modelUrl: mock.url },
  );
}, 60_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  await mock?.close();
  if (dir) cleanup(dir);
});

/** The venv's python; a clear failure (never a skip) when it cannot be made. */
function python(): string {
  try {
    return execFileSync("bash", [join(repoRoot, "scripts/python-sdk.sh")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }).trim();
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(
      `scripts/python-sdk.sh could not provide the Python SDK venv:\n${err.stderr ?? err.message}`,
    );
  }
}

it(
  "the openai Python SDK works unchanged against the server (pytest test/sdk/python)",
  async () => {
    const py = python();
    const started = Date.now();
    const child = spawn(py, ["-m", "pytest", "-q", "-p", "no:cacheprovider", suite], {
      cwd: suite,
      env: {
        ...process.env,
        AGENT_API_BASE_URL: server.url,
        AGENT_API_WORKSPACE: join(dir, "data", "workspace"),
        PYTHONDONTWRITEBYTECODE: "1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      out += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), PYTEST_TIMEOUT_MS);
    const code = await new Promise<number | null>((r) => child.on("exit", (c) => r(c)));
    clearTimeout(timer);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const report = `pytest exited ${code} after ${seconds} s:\n${out}\n--- server stderr ---\n${server.stderr()}`;
    expect(code, report).toBe(0);
    expect(out, report).toMatch(/\d+ passed/);
    expect(out, report).not.toMatch(/\d+ (failed|errors?|skipped)\b/);
    // The summary and what was validated (pytest's last lines), for the record.
    console.info(`pytest (${seconds} s): ${out.trim().split("\n").slice(-2).reverse().join("\n")}`);
  },
  PYTEST_TIMEOUT_MS + 60_000,
);

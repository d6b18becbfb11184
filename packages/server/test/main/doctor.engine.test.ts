// `codex-agent-api doctor`: the real CLI on this host, its JSON, its exit code, and the checks that depend on the
// configuration (a model it cannot reach, a data directory in use, a secret key others can read).
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processesUsing } from "@codex-agent-api/testkit";
import { afterAll, describe, expect, it } from "vitest";
import type { DoctorReport } from "../../src/main/doctor.js";
import { runCliToExit, startCliServer } from "../support/cli-process.js";
import { cleanup, waitFor } from "../support/fixture.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) {
    await waitFor(() => processesUsing(d).length === 0, 15_000, "the server's engines to exit");
    cleanup(d);
  }
});
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), "cas-doctor-test-"));
  dirs.push(d);
  return d;
};

async function doctor(args: string[], env: Record<string, string> = {}) {
  const r = await runCliToExit([...args, "--json"], env, 60_000, "doctor");
  return { code: r.code, report: JSON.parse(r.stdout) as DoctorReport, stderr: r.stderr };
}
const check = (r: DoctorReport, name: string) => r.checks.find((c) => c.name === name);

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("codex-agent-api doctor", () => {
  it("passes on this host with the scripted model, and says what each backend guarantees", async () => {
    const { code, report } = await doctor(["--mock-model", "--data-dir", scratch()]);
    expect(report.checks.filter((c) => c.status === "error")).toEqual([]);
    expect(code).toBe(0);
    for (const name of [
      "node",
      "engine",
      "bubblewrap",
      "engine sandbox",
      "podman",
      "cgroups",
      "sandbox image",
    ]) {
      expect(check(report, name), name).toBeDefined();
    }
    expect(check(report, "engine")?.detail).toMatch(/codex 0\.169\.0/);
    expect(check(report, "engine sandbox")?.status).toBe("ok");
    expect(check(report, "model")).toMatchObject({ status: "ok" });
    const local = Object.fromEntries(report.backends.local.map((g) => [g.what, g.holds]));
    expect(local["memory, CPU, pids per session"]).toBe(false);
    // (this kind of machine has the cgroup v1 memory, cpu and pids controllers and prlimit)
    expect(local["memory per engine process group"]).toBe(true);
    expect(local["pids per engine process group"]).toBe(true);
    expect(local["memory and file size per process"]).toBe(true);
    const container = Object.fromEntries(report.backends.container.map((g) => [g.what, g.holds]));
    expect(container["memory per session"]).toBe(true);
    expect(container["a kernel of its own"]).toBe(false);
  });

  it("an unreachable model is an error (exit 1), with what to do", async () => {
    const port = await closedPort();
    const { code, report } = await doctor(
      ["--data-dir", scratch(), "--model-base-url", `http://127.0.0.1:${port}/v1`],
      { OPENAI_API_KEY: "sk-test" },
    );
    expect(code).toBe(1);
    expect(report.status).toBe("error");
    expect(check(report, "model")).toMatchObject({
      status: "error",
      detail: expect.stringMatching(/ECONNREFUSED/),
    });
    expect(check(report, "model")?.fix).toMatch(/OPENAI_BASE_URL/);
  });

  it("no model key is an error; a data directory in use and a readable key file are warnings", async () => {
    const dir = scratch();
    const server = await startCliServer(dir);
    try {
      writeFileSync(join(dir, "secret.key"), `${Buffer.alloc(32, 7).toString("base64")}\n`);
      chmodSync(join(dir, "secret.key"), 0o644);
      const { code, report } = await doctor(["--data-dir", dir], { OPENAI_API_KEY: "" });
      expect(code).toBe(1);
      expect(check(report, "model")).toMatchObject({
        status: "error",
        detail: expect.stringMatching(/no model key/),
      });
      expect(check(report, "data directory")).toMatchObject({
        status: "warning",
        detail: expect.stringContaining(`pid ${server.pid}`),
      });
      expect(check(report, "secret key")).toMatchObject({
        status: "warning",
        fix: expect.stringMatching(/chmod 600/),
      });
      expect(check(report, "database")?.detail).toMatch(/SQLite .*schema \d+/);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});

describe("the start-up summary", () => {
  const doctorLines = (server: { logs(): Array<Record<string, unknown>> }) =>
    server.logs().filter((l) => String(l.msg).startsWith("doctor:"));

  it("a healthy start logs that the checks passed, and nothing else of the doctor's", async () => {
    const server = await startCliServer(scratch());
    try {
      await waitFor(
        () => doctorLines(server).some((l) => l.msg === "doctor: start-up checks ok"),
        60_000,
        "the start-up checks",
      );
      expect(doctorLines(server).map((l) => l.msg)).toEqual(["doctor: start-up checks ok"]);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("a start with an unreachable model serves, and logs the doctor's error with what to do", async () => {
    const port = await closedPort();
    const server = await startCliServer(scratch(), [], {}, { modelUrl: `http://127.0.0.1:${port}/v1` });
    try {
      // (modelUrl sets a dummy key; the model is unreachable: an error, yet the service serves)
      const model = await waitFor(
        () => doctorLines(server).find((l) => l.check === "model"),
        60_000,
        "the doctor's model line",
      );
      expect(model).toMatchObject({ level: 50, detail: expect.stringMatching(/ECONNREFUSED/) });
      expect(model?.fix).toMatch(/OPENAI_BASE_URL/);
      await waitFor(
        () => doctorLines(server).some((l) => /1 check\(s\) not ok/.test(String(l.msg))),
        10_000,
        "the summary line",
      );
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});

// A stopped setup command leaves nothing running, even what escaped its wrapper: an engine whose terminate ends only
// the command's direct process (as a sandbox whose inner process lost its parent-death signal to a race) must not
// leave that inner process working in the environment's directory.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { EnvironmentSettings } from "../../../src/config/load.js";
import { Provisioner, type ProvisionJob } from "../../../src/domain/environments/provision.js";
import { killRemaining, type ProcessRef, processesIn, running } from "../../../src/kernel/process-tree.js";
import type { Engines } from "../../../src/platform/engine/types.js";
import { waitFor } from "../../support/fixture.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) {
    killRemaining(processesIn(d));
    rmSync(d, { recursive: true, force: true });
  }
});

/** An engine that runs `command/exec` as a wrapper plus a detached process that nobody's terminate reaches. */
function leakyEngine() {
  const wrappers = new Map<string, { child: ChildProcess; done: (r: unknown) => void }>();
  const calls: string[] = [];
  const engines = {
    async call<T>(method: string, params: unknown): Promise<T> {
      const p = params as { processId: string; cwd: string; command: string[] };
      calls.push(method);
      if (method === "command/exec/terminate") {
        wrappers.get(p.processId)?.child.kill("SIGKILL");
        return {} as T;
      }
      // The "inner process": its own session, reparented once started (out of the wrapper's tree).
      spawn("setsid", ["sleep", "300"], { cwd: p.cwd, detached: true, stdio: "ignore" }).unref();
      const child = spawn("sleep", ["300"], { cwd: p.cwd, stdio: "ignore" });
      return new Promise<T>((resolve) => {
        wrappers.set(p.processId, { child, done: resolve as (r: unknown) => void });
        child.on("exit", () => resolve({ exitCode: 137, stdout: "", stderr: "" } as T));
      });
    },
  } as Pick<Engines, "call"> as Engines;
  return { engines, calls };
}

function job(directory: string, command: string): ProvisionJob {
  return {
    id: "env_test",
    directory,
    spec: {
      env: {},
      files: [],
      network: { access: "disabled", allowed_domains: [] },
      repositories: [],
      packages: { npm: [], python: [], system: [] },
      setup_commands: [{ command, cwd: "" }],
      environment_template_id: null,
    },
    extraEnv: {},
    redact: (t) => t,
    logFile: join(directory, "..", "setup.log"),
  };
}

describe("stopping an environment's preparation", () => {
  it("ends what the setup command left running in the directory, wherever it was reparented", async () => {
    const root = mkdtempSync(join(tmpdir(), "cas-provision-"));
    dirs.push(root);
    const directory = join(root, "env");
    const { engines, calls } = leakyEngine();
    const provisioner = new Provisioner({
      engines,
      settings: { setupTimeoutSeconds: 600, setupNetwork: false } as EnvironmentSettings,
      logger: pino({ level: "silent" }),
      searchPath: "/usr/bin:/bin",
    });
    const result = provisioner.run(job(directory, "sleep 300"));
    const started = await waitFor(
      () => {
        const found = processesIn(directory);
        return found.length >= 2 ? found : null;
      },
      10_000,
      "the command and its escaped process to start",
    );
    provisioner.cancel("env_test");
    const r = await result;
    expect(r.ok).toBe(false);
    expect(calls).toContain("command/exec/terminate");
    const alive = (ps: ProcessRef[]) => ps.filter(running);
    await waitFor(() => alive(started ?? []).length === 0, 5000, "the left processes to end");
    expect(processesIn(directory)).toEqual([]);
  });
});

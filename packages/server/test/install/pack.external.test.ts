// The npm packages as a user gets them: every published package packed (scripts/pack.sh), the tarballs installed
// into an empty directory outside this repository (nothing resolves into the checkout), then the service started
// with `npx codex-agent-api --mock-model` there: it serves, runs a turn with a shell command, serves the console,
// and its doctor finds the engine it installed. npm's warnings are part of what is checked: no EBADENGINE on this
// Node, no install script left uncovered by the project's `allowScripts`.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { processesUsing } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, repoRoot } from "../support/cli-process.js";
import { cleanup, waitFor } from "../support/fixture.js";

const run = promisify(execFile);
const INSTALL_MS = 600_000;

let dir: string;
let tarballs: string[];
let install: { stdout: string; stderr: string };
let server: ChildProcess | undefined;
let out = "";
let url = "";

beforeAll(async () => {
  // On disk, as an install would be (not the RAM disk the tests' TMPDIR may be: the engine's sandbox gives its
  // commands a /dev of their own, and a `codex sandbox` started from a binary under /dev/shm cannot re-exec it).
  dir = mkdtempSync("/var/tmp/cas-pack-");
  const packed = await run("bash", [join(repoRoot, "scripts/pack.sh"), "--built", join(dir, "tarballs")], {
    cwd: repoRoot,
    maxBuffer: 16 << 20,
  });
  tarballs = packed.stdout.trim().split("\n");
  const project = join(dir, "project");
  await run("mkdir", [project]);
  // What the README tells a user to put in their project (npm 11 warns, npm 12 blocks, without it).
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "try-it", private: true, allowScripts: { "better-sqlite3": true } }),
  );
  install = await run("npm", ["install", "--omit=dev", "--no-audit", "--no-fund", ...tarballs], {
    cwd: project,
    maxBuffer: 16 << 20,
    timeout: INSTALL_MS,
    env: cleanEnv(),
  });
}, INSTALL_MS + 60_000);

afterAll(async () => {
  if (dir) {
    // npx runs the service as a grandchild (npx → npm exec → sh → node → engine), and npx itself need not stay its
    // parent: every process that runs from the install or on its data goes, the service first (it stops its engines).
    const running = () => processesUsing(dir);
    const services = running().filter((p) => p.cmdline.includes("/.bin/codex-agent-api"));
    for (const p of services.length ? services : running()) {
      try {
        process.kill(p.pid, "SIGTERM");
      } catch {
        // gone meanwhile
      }
    }
    await waitFor(
      () => running().length === 0,
      20_000,
      "the installed service and its engines to exit",
    ).catch((err: unknown) => {
      for (const p of running()) {
        try {
          process.kill(p.pid, "SIGKILL");
        } catch {
          // gone meanwhile
        }
      }
      throw err;
    });
    cleanup(dir);
  }
});

describe("npm packages", () => {
  it("pack the published packages with their built output (and the server its migrations) only", async () => {
    const names = tarballs.map((t) => t.slice(t.lastIndexOf("/") + 1)).sort();
    expect(names).toEqual([
      "codex-agent-api-0.1.0.tgz",
      "codex-agent-api-codex-0.1.0.tgz",
      "codex-agent-api-console-0.1.0.tgz",
      "codex-agent-api-egress-0.1.0.tgz",
      "codex-agent-api-mock-model-0.1.0.tgz",
      "codex-agent-api-sandbox-0.1.0.tgz",
    ]);
    const service = tarballs.find((t) => t.endsWith("/codex-agent-api-0.1.0.tgz"))!;
    const files = (await run("tar", ["tzf", service])).stdout.trim().split("\n");
    expect(files).toContain("package/dist/cli.js");
    expect(files).toContain("package/dist/index.d.ts");
    expect(files).toContain("package/CHANGELOG.md");
    // The schema migrations, read at run time from beside dist/.
    expect(files).toContain("package/migrations/sqlite/001_initial.sql");
    expect(files).toContain("package/migrations/postgres/001_base.sql");
    expect(
      files.filter(
        (f) =>
          !/^package\/(dist\/|migrations\/(sqlite|postgres)\/\d+_[^/]+\.sql$|README\.md$|CHANGELOG\.md$|package\.json$)/.test(
            f,
          ),
      ),
    ).toEqual([]);
    const console = tarballs.find((t) => t.includes("-console-"))!;
    expect((await run("tar", ["tzf", console])).stdout).toMatch(/package\/dist\/index\.html/);
  });

  it("install into an empty directory without a warning about engines or install scripts", () => {
    const warnings = `${install.stdout}\n${install.stderr}`;
    expect(warnings).not.toMatch(/EBADENGINE/);
    expect(warnings).not.toMatch(/not yet covered by allowScripts/);
    const modules = join(dir, "project/node_modules");
    expect(existsSync(join(modules, "codex-agent-api/dist/cli.js"))).toBe(true);
    expect(existsSync(join(modules, ".bin/codex-agent-api"))).toBe(true);
    // The native SQLite binding was built (its install script ran).
    expect(readdirSync(join(modules, "better-sqlite3/build/Release"))).toContain("better_sqlite3.node");
    // The dev-only dependencies of the workspace stay out.
    for (const dev of ["vitest", "typescript", "react", "vite", "openai"]) {
      expect(existsSync(join(modules, dev)), dev).toBe(false);
    }
  });

  it(
    "npx codex-agent-api --mock-model serves, runs a turn and serves the console",
    { timeout: 180_000 },
    async () => {
      const project = join(dir, "project");
      server = spawn(
        "npx",
        ["codex-agent-api", "--mock-model", "--port", "0", "--data-dir", join(dir, "data")],
        {
          cwd: project,
          env: cleanEnv({ LOG_LEVEL: "info" }),
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let err = "";
      server.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
      });
      server.stderr!.on("data", (d: Buffer) => {
        err += d.toString();
      });
      const listening = await waitFor(
        () => {
          if (server!.exitCode !== null) throw new Error(`exited ${server!.exitCode}: ${err}\n${out}`);
          return /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*"msg":"codex-agent-api listening"/.exec(out)?.[1];
        },
        60_000,
        "the installed service to listen",
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}\nstdout: ${out}\nstderr: ${err}`);
      });
      url = listening!;
      const res = await fetch(`${url}/v1/agents/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          agent: { model: "mock-model" },
          input:
            "Run this exact shell command and wait for it to finish: ls. Then reply with exactly: listed",
        }),
      });
      expect(res.status).toBe(200);
      const session = (await res.json()) as {
        status: string;
        output: Array<{ item: { type: string; text?: string; exit_code?: number } }>;
      };
      expect(session.status).toBe("idle");
      const items = session.output.map((o) => o.item);
      expect(items.find((i) => i.type === "command_execution")?.exit_code).toBe(0);
      expect(items.find((i) => i.type === "agent_message")?.text).toBe("listed");
      const page = await fetch(`${url}/console/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<div id="root">/);
      const doctor = await waitFor(
        () => /"msg":"doctor: [^"]*"/.exec(out)?.[0],
        60_000,
        "the start-up checks",
      );
      expect(doctor, out).toBe('"msg":"doctor: start-up checks ok"');
    },
  );

  it("the installed doctor finds the engine it installed", async () => {
    const r = await run(
      "npx",
      ["codex-agent-api", "doctor", "--json", "--mock-model", "--data-dir", join(dir, "doctor-data")],
      { cwd: join(dir, "project"), env: cleanEnv(), maxBuffer: 16 << 20 },
    ).catch((e: { stdout: string }) => e);
    const report = JSON.parse(r.stdout) as {
      checks: Array<{ name: string; status: string; detail: string }>;
    };
    const engine = report.checks.find((c) => c.name === "engine");
    expect(engine?.status).toBe("ok");
    expect(engine?.detail).toContain(join(dir, "project/node_modules/"));
  });
});

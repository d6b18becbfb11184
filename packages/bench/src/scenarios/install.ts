/**
 * Scenario 16: start-up to a healthy `/health`, for each way to run the service — this repository's build run
 * directly (the reference), `npm start` in the repository when everything is built already (the up-to-date check
 * it pays each time), the npm packages installed from their tarballs (`npx codex-agent-api`), and the container
 * image (`podman run`). Each start is a fresh data directory with the scripted model; the starts alternate.
 * Unmeasured set-up: packing and installing the tarballs (cached by their content), building the image (cached by
 * its content stamp).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { containerUlimits } from "@codex-agent-api/sandbox";
import type { Context, Scenario } from "../context.js";
import { type Cleanup, freePort, now, sleep } from "../proc.js";
import { median, type Row, sampleRow } from "../stats.js";

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../../..", import.meta.url));
/** Installs of the packed tarballs, kept between bench runs (one per tarball content). */
const INSTALL_CACHE = "/var/tmp/codex-agent-api-bench/install";

interface Way {
  name: string;
  /** Starts the service on `port` with a fresh data directory; returns how to stop it. */
  start(port: number, dataDir: string): { child: ChildProcess; stop(): Promise<void> };
}

/** The environment without anything that would change the service's configuration. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(AGENT_|CODEX_|OPENAI_|npm_)/.test(k) || ["HOST", "PORT", "WORKSPACE", "LOG_LEVEL"].includes(k))
      continue;
    env[k] = v;
  }
  return env;
}

/** A process group of its own (npm and npx run the service as a grandchild), stopped as a whole. */
function processGroup(
  cmd: string,
  args: string[],
  cwd: string,
): { child: ChildProcess; stop(): Promise<void> } {
  const child = spawn(cmd, args, { cwd, env: cleanEnv(), stdio: "ignore", detached: true });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(-child.pid!, "SIGTERM");
        const killer = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), 10_000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}

const serveArgs = (port: number, dataDir: string) => [
  "--mock-model",
  "--port",
  String(port),
  "--data-dir",
  dataDir,
  "--log-level",
  "warn",
];

/** ms from spawn to the first `/health` 200 (polled every 5 ms on a fresh connection). */
async function timeToHealth(way: Way, cleanup: Cleanup, dataDir: string): Promise<number> {
  const port = await freePort();
  const t0 = now();
  const started = way.start(port, dataDir);
  const unregister = cleanup.add(`${way.name} on ${port}`, started.stop);
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: "close" } })
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) return now() - t0;
      if (started.child.exitCode !== null) throw new Error(`${way.name} exited (${started.child.exitCode})`);
      if (Date.now() > deadline) throw new Error(`${way.name}: no /health within 60 s`);
      await sleep(5);
    }
  } finally {
    await started.stop();
    unregister();
  }
}

/** The tarballs packed from this build, installed into an empty directory (reused when their content is the same). */
async function installedPackage(ctx: Context): Promise<string> {
  const { dir } = ctx.cleanup.tempDir("pack");
  await run("node", [join(repo, "scripts/build.mjs")], { cwd: repo });
  const { stdout } = await run("bash", [join(repo, "scripts/pack.sh"), "--built", dir], { cwd: repo });
  const tarballs = stdout.trim().split("\n").sort();
  const hash = createHash("sha256");
  for (const t of tarballs) hash.update(readFileSync(t));
  const project = join(INSTALL_CACHE, hash.digest("hex").slice(0, 16));
  if (existsSync(join(project, "node_modules/.bin/codex-agent-api"))) return project;
  ctx.log("  installing the packed tarballs (once per build; about two minutes: better-sqlite3 compiles)…");
  mkdirSync(project, { recursive: true });
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "bench-install", private: true, allowScripts: { "better-sqlite3": true } }),
  );
  await run("npm", ["install", "--omit=dev", "--no-audit", "--no-fund", ...tarballs], {
    cwd: project,
    env: cleanEnv(),
    maxBuffer: 16 << 20,
  });
  // Older installs of other builds go.
  for (const old of readdirSync(INSTALL_CACHE)) {
    if (join(INSTALL_CACHE, old) !== project) await run("rm", ["-rf", join(INSTALL_CACHE, old)]);
  }
  return project;
}

/** The service image (deploy/image/build.sh: a no-op when the image is up to date); its name. */
async function serviceImage(tarballDir: string): Promise<string> {
  const { stdout } = await run("bash", [join(repo, "deploy/image/build.sh"), tarballDir], {
    cwd: repo,
    maxBuffer: 16 << 20,
  });
  return stdout.trim().split("\n").at(-1)!;
}

export const install: Scenario = {
  id: "16",
  title: "Start-up to a healthy /health, by way of running it",
  async run(ctx: Context) {
    const runs = ctx.quick ? 3 : 7;
    const project = await installedPackage(ctx);
    const ways: Way[] = [
      {
        name: "node packages/server/dist/cli.js",
        start: (port, data) =>
          processGroup(
            process.execPath,
            [join(repo, "packages/server/dist/cli.js"), ...serveArgs(port, data)],
            repo,
          ),
      },
      {
        name: "npm start (repository, built)",
        start: (port, data) => processGroup("npm", ["start", "--", ...serveArgs(port, data)], repo),
      },
      {
        name: "npx codex-agent-api (npm package)",
        start: (port, data) => processGroup("npx", ["codex-agent-api", ...serveArgs(port, data)], project),
      },
    ];
    const notes: string[] = [];
    if (process.getuid?.() === 0 && existsSync(join(repo, "deploy/image/build.sh"))) {
      const { dir } = ctx.cleanup.tempDir("image-pack");
      await run("bash", [join(repo, "scripts/pack.sh"), "--built", dir], { cwd: repo });
      const image = await serviceImage(dir);
      const ulimits = containerUlimits();
      ways.push({
        name: "podman run (image)",
        start: (port) =>
          processGroup(
            "podman",
            [
              "run",
              "--rm",
              "--runtime",
              "runc",
              "--cgroup-manager=cgroupfs",
              "--ulimit",
              `nofile=${ulimits.nofile}:${ulimits.nofile}`,
              "--ulimit",
              `nproc=${ulimits.nproc}:${ulimits.nproc}`,
              "-p",
              `127.0.0.1:${port}:9000`,
              "-e",
              "AGENT_MOCK_MODEL=1",
              "-e",
              "AGENT_INSECURE_NO_AUTH=1",
              image,
            ],
            repo,
          ),
      });
      notes.push(
        `The image: ${image}, a new container each start (\`podman run --rm\`, its own empty /data).`,
      );
    } else {
      notes.push("No image row: building and running the image needs root and deploy/image/build.sh.");
    }
    const samples = new Map<string, number[]>(ways.map((w) => [w.name, []]));
    const { dir } = ctx.cleanup.tempDir("install-starts");
    // One unmeasured start of each first (page cache, first-run work), then alternate.
    for (let r = -1; r < runs; r++) {
      for (const way of ways) {
        const ms = await timeToHealth(
          way,
          ctx.cleanup,
          join(dir, `${samples.get(way.name)!.length}-${r + 1}`),
        );
        if (r >= 0) samples.get(way.name)!.push(ms);
      }
    }
    const reference = samples.get(ways[0]!.name)!;
    const rows: Row[] = ways.map((w, i) =>
      sampleRow(
        `spawn → /health 200: ${w.name}`,
        "ms",
        samples.get(w.name)!,
        i === 0 ? undefined : { ref: reference, name: "cli.js" },
      ),
    );
    return {
      id: this.id,
      title: this.title,
      rows,
      targets: [
        {
          name: "npm start when built: the up-to-date check",
          value: median(samples.get(ways[1]!.name)!) - median(reference),
          op: "<=",
          threshold: 2000,
          unit: "ms",
        },
      ],
      notes: [
        "Each start: a fresh data directory, the scripted model, SIGTERM to the whole process group after the first 200.",
        "`npm start` = `node scripts/build.mjs` (tsc -b and the console's build, each skipped when up to date) then cli.js.",
        ...notes,
      ],
      data: Object.fromEntries(samples),
    };
  },
};

// The container images of deploy/ for the install tests: packed from this build, built once (the build scripts
// are no-ops when the image carries the same content stamp), and podman with this machine's runtime settings.
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { containerUlimits } from "@codex-agent-api/sandbox";
import { repoRoot } from "../support/cli-process.js";

const exec = promisify(execFile);

/** The ulimits a container gets here (the sandbox backend's: at or below this host's hard limits and pid_max). */
export const ULIMITS = containerUlimits();

/**
 * How podman runs containers on this kind of machine: hybrid cgroups need runc and cgroupfs as the manager (crun
 * and systemd refuse them), and the ulimits at or below the hard ones (podman's defaults are above them).
 */
export const RUNTIME = [
  "--runtime",
  "runc",
  "--cgroup-manager=cgroupfs",
  "--ulimit",
  `nofile=${ULIMITS.nofile}:${ULIMITS.nofile}`,
  "--ulimit",
  `nproc=${ULIMITS.nproc}:${ULIMITS.nproc}`,
];

/** The same as a containers.conf, for what starts podman itself (podman-compose). */
export const CONTAINERS_CONF = [
  "[containers]",
  `default_ulimits = ["nofile=${ULIMITS.nofile}:${ULIMITS.nofile}", "nproc=${ULIMITS.nproc}:${ULIMITS.nproc}"]`,
  "[engine]",
  'runtime = "runc"',
  'cgroup_manager = "cgroupfs"',
  "",
].join("\n");

export async function podman(...args: string[]): Promise<string> {
  const { stdout } = await exec("podman", args, { maxBuffer: 16 << 20 });
  return stdout.trim();
}

/** podman, also when it fails: its exit code and output. */
export async function podmanResult(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec("podman", args, { maxBuffer: 16 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof e.code === "number" ? e.code : 1,
      stdout: e.stdout ?? "",
      stderr: e.stderr ?? "",
    }),
  );
}

async function script(path: string, args: string[]): Promise<string> {
  const { stdout } = await exec("bash", [join(repoRoot, path), ...args], {
    cwd: repoRoot,
    maxBuffer: 16 << 20,
    timeout: 15 * 60_000,
  });
  return stdout.trim().split("\n").at(-1)!;
}

let service: Promise<string> | null = null;

/** The service image of this build (deploy/image/build.sh from the tarballs of scripts/pack.sh --built). */
export function serviceImage(): Promise<string> {
  service ??= (async () => {
    const dir = mkdtempSync("/var/tmp/cas-image-pack-");
    await script("scripts/pack.sh", ["--built", dir]);
    try {
      return await script("deploy/image/build.sh", [dir]);
    } finally {
      await exec("rm", ["-rf", dir]);
    }
  })();
  return service;
}

/** The PostgreSQL image made from Debian's packages (deploy/postgres/build.sh). */
export function postgresImage(): Promise<string> {
  return script("deploy/postgres/build.sh", []);
}

/** A name of this test run's own (containers, volumes, projects): nothing else is ever touched. */
export const uniqueName = (prefix: string) =>
  `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

/** A TCP port free on 127.0.0.1 right now (bound and released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

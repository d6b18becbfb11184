// Test helpers for the container backend: the image (built when missing), scratch roots on a real file system (loop
// images need one), and checks that a test left no container or mount behind.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { buildImage, ContainerBackend, DEFAULT_IMAGE } from "@codex-agent-api/sandbox";

let imageReady: Promise<string> | null = null;
/** The default sandbox image, built when missing (cached by its content stamp). */
export function ensureSandboxImage(): Promise<string> {
  imageReady ??= buildImage({ log: (l) => console.log(l) }).then(() => DEFAULT_IMAGE);
  return imageReady;
}

/** A scratch directory on the host's disk (not a tmpfs: the loop driver wants a real file system). */
export const sandboxRoot = (tag: string): string =>
  mkdtempSync(join(process.env.SANDBOX_TEST_ROOT ?? "/var/tmp", `cas-sbx-${tag}-`));

/** A container name prefix unique to this test process. */
export const sandboxPrefix = (tag: string): string => `t${process.pid.toString(36)}${tag}-`;

export function containersWithPrefix(prefix: string): string[] {
  const out = execFileSync("podman", ["ps", "-a", "--format", "{{.Names}}"], { encoding: "utf8" });
  return out.split("\n").filter((n) => n.startsWith(prefix));
}

export function mountsUnder(dir: string): string[] {
  const mounts = execFileSync("findmnt", ["-rn", "-o", "TARGET"], { encoding: "utf8" }).split("\n");
  return mounts.map((l) => l.trim()).filter((l) => l.startsWith(dir));
}

/**
 * The sandbox backend a suite runs on: `TEST_SANDBOX_BACKEND=container` (the `container` project of
 * vitest.config.ts) runs every session of a server in a container of its own, unless the test chose a backend.
 * `dir` (the sandboxes' root) is removed when the test process ends, if its server has not.
 */
const suiteRoots = new Set<string>();
export function backendArgs(args: readonly string[]): { args: string[]; dir: string | null } {
  if (process.env.TEST_SANDBOX_BACKEND !== "container" || args.includes("--sandbox-backend")) {
    return { args: [], dir: null };
  }
  const dir = sandboxRoot("suite");
  if (suiteRoots.size === 0) {
    process.once("exit", () => {
      for (const d of suiteRoots) {
        try {
          rmSync(d, { recursive: true, force: true });
        } catch {
          // a workspace still mounted: scripts/container-suites.ts removes it once the run ends
        }
      }
    });
  }
  suiteRoots.add(dir);
  return { args: ["--sandbox-backend", "container", "--sandbox-dir", dir], dir };
}

/**
 * Removes every sandbox a stopped server left under its sandbox root (a service keeps them for its next start),
 * their mounts with them, then the root.
 */
export async function removeSandboxes(dir: string): Promise<void> {
  const backend = await ContainerBackend.open({ rootDir: join(dir, "backend") });
  try {
    for (const r of await backend.list()) {
      if (r.id !== null) await (await backend.adopt(r.id))?.destroy();
    }
  } finally {
    await backend.close({ stop: true });
  }
  rmSync(dir, { recursive: true, force: true });
  suiteRoots.delete(dir);
}

/**
 * What a test wrote into a workspace on this host (`path`, recursively), given to the workspace's owner — on the
 * container backend the agent's user — as a person's own edits would be. Nothing to do on the local backend.
 */
export function giveToOwner(ws: string, path: string = ws): void {
  if (statSync(ws).uid === process.getuid?.()) return;
  execFileSync("chown", ["-R", "--no-dereference", `--reference=${ws}`, path]);
}

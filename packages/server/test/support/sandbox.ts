// Test helpers for the container backend: the image (built when missing), scratch roots on a real file system (loop
// images need one), and checks that a test left no container or mount behind.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
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
 * `dir` (the sandboxes' root, one per data directory) is removed when the test process ends, if its server has not.
 */
/** This run's suites are on the container backend (the `container` project of vitest.config.ts). */
export const onContainerBackend = process.env.TEST_SANDBOX_BACKEND === "container";

const suiteRoots = new Set<string>();
const rootOfData = new Map<string, string>();
export function backendArgs(
  args: readonly string[],
  dataDir: string,
): { args: string[]; dir: string | null } {
  if (!onContainerBackend || args.includes("--sandbox-backend")) {
    return { args: [], dir: null };
  }
  // A restart on the same data directory finds its sandboxes again.
  const dir = rootOfData.get(dataDir) ?? sandboxRoot("suite");
  rootOfData.set(dataDir, dir);
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
      try {
        if (r.id !== null) await (await backend.adopt(r.id))?.destroy();
      } catch {
        // Not adoptable (the directory it bind-mounts is gone with its data directory): removed by hand.
        execFileSync("podman", ["rm", "-f", "-t", "0", r.containerName], { stdio: "ignore" });
        if (r.disk.kind === "loop" && mountsUnder(r.disk.mountPath).length > 0) {
          execFileSync("umount", [r.disk.mountPath]);
        }
      }
    }
  } finally {
    await backend.close({ stop: true });
  }
  rmSync(dir, { recursive: true, force: true });
  suiteRoots.delete(dir);
  for (const [data, root] of rootOfData) if (root === dir) rootOfData.delete(data);
}

/**
 * What a test wrote into a workspace on this host (`path`, recursively), given to the workspace's owner — on the
 * container backend the agent's user — as a person's own edits would be. Nothing to do on the local backend.
 */
export function giveToOwner(ws: string, path: string = ws): void {
  if (statSync(ws).uid === process.getuid?.()) return;
  execFileSync("chown", ["-R", "--no-dereference", `--reference=${ws}`, path]);
}

/**
 * A session's workspace on this host, for a server run by a test on `dataDir`: `<data>/workspace/<id>` (local), or
 * its sandbox's volume (container; found by the sandbox records under the server's sandbox root).
 */
export function hostWorkspaceOf(dataDir: string, sessionId: string): string {
  const root = rootOfData.get(dataDir);
  if (!root) return join(dataDir, "workspace", sessionId);
  const sandboxes = join(root, "backend", "sandboxes");
  for (const key of existsSync(sandboxes) ? readdirSync(sandboxes) : []) {
    const meta = join(sandboxes, key, "meta.json");
    if (!existsSync(meta)) continue;
    const r = JSON.parse(readFileSync(meta, "utf8")) as { id: string | null; disk: { mountPath: string } };
    if (r.id === sessionId) return r.disk.mountPath;
  }
  throw new Error(`no sandbox of session ${sessionId} under ${root}`);
}

// The workspace volume of a sandbox: a sparse ext4 image loop-mounted on the host (its size is the disk limit), or a
// plain directory where loop mounts are impossible (then the disk limit is not enforced).
import { existsSync } from "node:fs";
import { chown, mkdir, readFile, rm, rmdir, statfs } from "node:fs/promises";
import { SandboxError } from "./errors.js";
import { runCommand } from "./exec.js";
import type { SandboxRecord } from "./types.js";

export type DiskRecord = SandboxRecord["disk"];

/** The mount points in this process's mount namespace (octal escapes of /proc/self/mountinfo decoded). */
async function mountPoints(): Promise<Set<string>> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  const out = new Set<string>();
  for (const line of text.split("\n")) {
    const field = line.split(" ")[4];
    if (field)
      out.add(field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8))));
  }
  return out;
}

export async function isMounted(path: string): Promise<boolean> {
  return (await mountPoints()).has(path);
}

async function must(cmd: string, args: string[], what: string): Promise<void> {
  const res = await runCommand(cmd, args, { timeoutMs: 60_000 });
  if (res.code !== 0) {
    throw new SandboxError(
      "disk_failed",
      `${what} failed: ${res.stderr.trim() || `exit ${res.code ?? res.signal}`}`,
    );
  }
}

/** Makes the workspace (`mountPath` owned by uid:gid). Loop: a sparse image of `bytes`, ext4, mounted nodev,nosuid. */
export async function createWorkspace(
  disk: DiskRecord,
  bytes: number,
  owner: { uid: number; gid: number },
): Promise<void> {
  await mkdir(disk.mountPath, { recursive: true, mode: 0o755 });
  if (disk.kind === "dir" || disk.kind === "bind") {
    if (process.getuid?.() === 0) await chown(disk.mountPath, owner.uid, owner.gid);
    return;
  }
  await must("truncate", ["-s", String(bytes), disk.imagePath], "truncate");
  await must(
    "mkfs.ext4",
    [
      "-q",
      "-F",
      "-m",
      "0",
      "-E",
      `lazy_itable_init=1,lazy_journal_init=1,root_owner=${owner.uid}:${owner.gid}`,
      disk.imagePath,
    ],
    "mkfs.ext4",
  );
  await mountWorkspace(disk);
  // A clean workspace: lost+found would be the first thing an agent sees (e2fsck makes it again when it needs it).
  await rmdir(`${disk.mountPath}/lost+found`).catch(() => {});
}

/** Mounts a loop workspace again (after a host reboot); nothing when mounted or a plain directory. */
export async function mountWorkspace(disk: DiskRecord): Promise<void> {
  if (disk.kind === "bind") {
    if (!existsSync(disk.mountPath))
      throw new SandboxError("disk_failed", `workspace directory ${disk.mountPath} is missing`);
    return;
  }
  if (disk.kind === "dir") return;
  await mkdir(disk.mountPath, { recursive: true, mode: 0o755 });
  if (await isMounted(disk.mountPath)) return;
  if (!existsSync(disk.imagePath))
    throw new SandboxError("disk_failed", `workspace image ${disk.imagePath} is missing`);
  await must("mount", ["-o", "loop,nodev,nosuid", disk.imagePath, disk.mountPath], "mount");
}

/**
 * Unmounts (the loop device is released with the last user) and deletes the workspace and its image; a caller's
 * bind-mounted directory stays.
 */
export async function destroyWorkspace(disk: DiskRecord): Promise<void> {
  if (disk.kind === "bind") return;
  if (disk.kind === "loop") {
    if (await isMounted(disk.mountPath)) {
      const res = await runCommand("umount", [disk.mountPath], { timeoutMs: 60_000 });
      if (res.code !== 0) await must("umount", ["-l", disk.mountPath], "umount");
    }
    await rm(disk.imagePath, { force: true });
    await rmdir(disk.mountPath).catch(() => {});
    return;
  }
  await rm(disk.mountPath, { recursive: true, force: true });
}

/** Used and total bytes of the workspace file system (a plain directory: its file system's). */
export async function workspaceUsage(disk: DiskRecord): Promise<{ used: number; max: number } | null> {
  try {
    const fs = await statfs(disk.mountPath);
    return { used: (fs.blocks - fs.bfree) * fs.bsize, max: fs.blocks * fs.bsize };
  } catch {
    return null;
  }
}

/**
 * Listening on a unix socket that is never connectable with the wrong permissions: the socket is bound in a private
 * (0700) directory beside its final path, given its owner and mode there, then renamed into place. Its directory is
 * created when missing (and removed on close if it was created here and is empty).
 */
import { randomBytes } from "node:crypto";
import { chmod, chown, lstat, mkdir, rename, rmdir, stat, unlink } from "node:fs/promises";
import type { Server } from "node:net";
import { dirname, join } from "node:path";

export interface SocketAccess {
  /** The socket's owner (default: this process's user). */
  uid?: number;
  /** The socket's group (default: this process's group); the directory's group when it is created here. */
  gid?: number;
  /** The socket's mode (default 0600). */
  mode?: number;
}

/** Linux's limit for a unix socket path (sun_path, 108 bytes with the terminating NUL), with room for the temp name. */
export const MAX_SOCKET_PATH = 100;

export interface BoundSocket {
  path: string;
  /** The socket's inode (so that close removes this socket, not one that replaced it). */
  ino: number;
  createdDir: string | null;
}

const listen = (server: Server, path: string) =>
  new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });

export async function bindSocket(server: Server, path: string, access: SocketAccess): Promise<BoundSocket> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    throw new RangeError(`socketPath is longer than ${MAX_SOCKET_PATH} bytes: ${path}`);
  }
  const dir = dirname(path);
  let createdDir: string | null = null;
  const existingDir = await stat(dir).catch(() => null);
  if (!existingDir) {
    await mkdir(dir, { mode: 0o700 });
    createdDir = dir;
    if (access.gid !== undefined) await chown(dir, process.getuid?.() ?? 0, access.gid);
    // Traversable by the socket's group (or by everyone without one); never listable or writable by them.
    await chmod(dir, access.gid !== undefined ? 0o710 : 0o711);
  } else if (!existingDir.isDirectory()) {
    throw new Error(`${dir} is not a directory`);
  }
  const existing = await lstat(path).catch(() => null);
  if (existing && !existing.isSocket()) throw new Error(`${path} exists and is not a socket`);

  const tmpDir = join(dir, `.egress-${randomBytes(4).toString("hex")}`);
  await mkdir(tmpDir, { mode: 0o700 });
  const tmpPath = join(tmpDir, "s");
  try {
    await listen(server, tmpPath);
    if (access.uid !== undefined || access.gid !== undefined) {
      await chown(tmpPath, access.uid ?? process.getuid?.() ?? 0, access.gid ?? process.getgid?.() ?? 0);
    }
    await chmod(tmpPath, access.mode ?? 0o600);
    // Replaces a stale socket (from a process that died) atomically.
    await rename(tmpPath, path);
  } catch (e) {
    server.close();
    await unlink(tmpPath).catch(() => {});
    await rmdir(tmpDir).catch(() => {});
    if (createdDir) await rmdir(createdDir).catch(() => {});
    throw e;
  }
  await rmdir(tmpDir);
  return { path, ino: (await lstat(path)).ino, createdDir };
}

/** Removes the socket (if it is still this one) and the directory created for it (if empty). */
export async function removeSocket(bound: BoundSocket): Promise<void> {
  const now = await lstat(bound.path).catch(() => null);
  if (now?.isSocket() && now.ino === bound.ino) await unlink(bound.path).catch(() => {});
  if (bound.createdDir) await rmdir(bound.createdDir).catch(() => {});
}

/**
 * One instance per data directory. The lock is an operating-system lock, so the kernel releases it when its holder
 * dies, however it dies (SIGKILL included): the next start takes it at once, with no stale lock to clean up. It is
 * SQLite's own file lock (POSIX fcntl, through better-sqlite3, which the service has anyway): an exclusive
 * transaction on an empty lock file, kept open for the process's life; a second opener gets SQLITE_BUSY at once.
 * (The alternatives: a pid file written with O_EXCL plus a liveness check is fooled by pid reuse and needs stale
 * clean-up; mtime-based lock files such as proper-lockfile stay held for their stale period after a SIGKILL; native
 * flock modules are another native dependency.) Who holds it is written next to it, for the message the next
 * instance prints. Like any fcntl lock it is reliable on local filesystems, not necessarily on network ones.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { pidAlive } from "../kernel/process-tree.js";

export const LOCK_FILE = "instance.lock";
export const HOLDER_FILE = "instance.json";

export interface LockHolder {
  pid: number;
  host: string;
  /** ISO time the holder took the lock. */
  since: string;
}

/** The directory is locked by another process. */
export class DirLockedError extends Error {
  constructor(
    readonly dir: string,
    readonly holder: LockHolder | null,
  ) {
    const who = holder
      ? `pid ${holder.pid}${holder.host !== hostname() ? ` on ${holder.host}` : ""}, since ${holder.since}`
      : "its pid is unknown";
    super(
      `The data directory ${dir} is in use by another codex-agent-api instance (${who}): stop it first, or give ` +
        "this one its own --data-dir.",
    );
    this.name = "DirLockedError";
  }
}

export interface DirLock {
  readonly dir: string;
  /** Releases the lock (also released by the kernel when the process ends). */
  release(): void;
}

/** Takes the lock of `dir` (created when missing), or throws DirLockedError without changing anything in it. */
export function lockDirectory(dir: string): DirLock {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, LOCK_FILE);
  const db = new Database(file, { timeout: 0 });
  try {
    // The journal in memory (OFF is refused in better-sqlite3's defensive mode): nothing is ever written, the lock
    // file stays empty and a holder that died leaves no journal behind.
    db.pragma("journal_mode = MEMORY");
    db.exec("BEGIN EXCLUSIVE");
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === "SQLITE_BUSY") throw new DirLockedError(dir, readHolder(dir));
    throw err;
  }
  const holder: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  const tmp = join(dir, `${HOLDER_FILE}.${process.pid}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(holder)}\n`);
  renameSync(tmp, join(dir, HOLDER_FILE));
  let released = false;
  return {
    dir,
    release() {
      if (released) return;
      released = true;
      rmSync(join(dir, HOLDER_FILE), { force: true });
      db.close();
    },
  };
}

/** Who holds the lock, as written next to it (null when unknown: not written yet, or left by a holder that died). */
function readHolder(dir: string): LockHolder | null {
  let h: Partial<LockHolder>;
  try {
    h = JSON.parse(readFileSync(join(dir, HOLDER_FILE), "utf8")) as Partial<LockHolder>;
  } catch {
    return null;
  }
  if (typeof h.pid !== "number" || typeof h.host !== "string") return null;
  if (h.host === hostname() && !pidAlive(h.pid)) return null;
  return { pid: h.pid, host: h.host, since: String(h.since ?? "?") };
}

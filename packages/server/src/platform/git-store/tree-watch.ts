/**
 * A large work tree watched between scans (inotify, through `fs.watch` on every directory), so that a scan need not
 * walk it: `take` answers what changed since the last take — nothing, these paths (and what lies under them), or
 * unknown (only a full scan can tell).
 *
 * Unknown: right after the watch started; when a `.gitignore` changed (its rules reach everything below it); when
 * more than `maxPaths` paths changed, or a name is not UTF-8; when a watch failed or the root was replaced; and when
 * so many events were delivered, across every watch of this process, that the kernel's queue may have overflowed.
 *
 * Why nothing is missed. A directory is watched before it is read, so what appears in it later is reported by its
 * own watch, or (a directory created after that) by its parent's, which names the new directory: the path covers
 * its whole content, and the new directory is watched in turn. The kernel queues an event during the write that
 * causes it; `settle` creates a file in a directory outside the tree, watched by the same inotify instance (libuv
 * has one per event loop), and waits for that event: the queue is first in, first out, so every event of a change
 * made before `settle` has been delivered by then. The kernel drops events only when its queue overflows
 * (`max_queued_events`, 16384 by default), which takes that many events queued at once: a window in which half as
 * many were delivered counts as unknown. Not seen by inotify: writes through a shared memory mapping, and changes
 * made by another machine on a network filesystem (`--checkpoint-watch off` is for such workspaces).
 *
 * Cost: one inotify watch per directory (the process keeps to half the user's limit in all), no file descriptor,
 * and a walk of the directories when the watch starts (about 0.1 s for 3 000 directories here, in the background).
 */
import type { Dirent, FSWatcher } from "node:fs";
import { readFileSync, watch } from "node:fs";
import { lstat, mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

export type TreeChanges =
  | { kind: "none" }
  | { kind: "paths"; paths: readonly string[] }
  | { kind: "unknown" };

export interface TreeWatchLimits {
  /** Directories one watch may hold: a larger tree is not watched. */
  maxDirs: number;
  /** Changed paths listed before the change counts as unknown (a full scan is as fast then). */
  maxPaths: number;
  /** The changed paths' total length beyond which the change counts as unknown (they go on a command line). */
  maxPathBytes: number;
}

export const DEFAULT_WATCH_LIMITS: TreeWatchLimits = {
  maxDirs: 20_000,
  maxPaths: 256,
  maxPathBytes: 64 * 1024,
};

const UNKNOWN: TreeChanges = { kind: "unknown" };
const NONE: TreeChanges = { kind: "none" };
/** How long `settle` waits for its own event before the change counts as unknown. */
const SETTLE_TIMEOUT_MS = 2000;

/** A directory's device and inode ("" when it cannot be read). */
async function identity(path: string): Promise<string> {
  const st = await lstat(path).catch(() => null);
  return st ? `${st.dev}:${st.ino}` : "";
}

function procInt(path: string, fallback: number): number {
  try {
    const n = Number(readFileSync(path, "utf8").trim());
    return Number.isFinite(n) && n > 0 ? n : fallback;
  } catch {
    return fallback;
  }
}

/** Events delivered to every watch of this process (the overflow guard compares windows of it). */
let delivered = 0;
const QUEUE_GUARD = Math.floor(procInt("/proc/sys/fs/inotify/max_queued_events", 16_384) / 2);
/** Directories watched by every TreeWatch of this process, kept to half the user's limit (the engine and the tools the agent runs share it). */
let watchedTotal = 0;
const TOTAL_BUDGET = Math.floor(procInt("/proc/sys/fs/inotify/max_user_watches", 8192) / 2);
/** Trees watched now (started and not closed). */
let trees = 0;

/** How many trees and directories this process watches (for /health). */
export function watchTotals(): { trees: number; dirs: number } {
  return { trees, dirs: watchedTotal };
}

export class TreeWatch {
  private readonly dirs = new Map<string, FSWatcher>();
  private paths = new Set<string>();
  private pathBytes = 0;
  /** Nothing is known of the changes since the last take (true until the first). */
  private unknown = true;
  /** The watch no longer covers the tree (a limit, an error): every take is unknown. */
  private failed = false;
  private closed = false;
  /** Counted in `trees` (a watch that started). */
  private counted = false;
  private deliveredAtTake = delivered;
  /** Directories being walked (a new one, or the start): `settle` waits for them. */
  private readonly pending = new Set<Promise<void>>();
  /** The root directory's identity when it was watched (replaced: nothing below it is watched any more). */
  private rootId = "";
  private barrier: FSWatcher | null = null;
  private barrierSeq = 0;
  private readonly barrierWaiters = new Map<string, () => void>();

  private constructor(
    private readonly root: string,
    private readonly excludedNames: ReadonlySet<string>,
    private readonly barrierDir: string,
    private readonly limits: TreeWatchLimits,
  ) {}

  /**
   * Watches every directory of `root` (not `.git`, nor directories named in `excludedNames`); `barrierDir`, outside
   * the tree, holds the file `settle` creates. Null when the tree cannot be watched (too many directories, the
   * inotify limit, an error).
   */
  static async start(
    root: string,
    excludedNames: ReadonlySet<string>,
    barrierDir: string,
    limits: TreeWatchLimits = DEFAULT_WATCH_LIMITS,
  ): Promise<TreeWatch | null> {
    const w = new TreeWatch(root, excludedNames, barrierDir, limits);
    try {
      await mkdir(barrierDir, { recursive: true });
      w.rootId = await identity(root);
      w.barrier = watch(barrierDir, { persistent: false }, (_type, name) => {
        if (typeof name === "string") w.barrierWaiters.get(name)?.();
      });
      w.barrier.on("error", () => w.fail());
      await w.track(w.watchTree(""));
      await w.drain();
    } catch {
      w.fail();
    }
    if (w.failed) {
      w.close();
      return null;
    }
    w.counted = true;
    trees++;
    return w;
  }

  /** The watch no longer covers the tree: it should be closed (a new one may be started later). */
  get broken(): boolean {
    return this.failed || this.closed;
  }

  /** How many directories are watched. */
  get size(): number {
    return this.dirs.size;
  }

  /**
   * Resolves once every event of a change made before the call has been delivered and every new directory is
   * watched; when its own event does not come back in time, the change counts as unknown.
   */
  async settle(): Promise<void> {
    if (this.broken || !this.barrier) return;
    const name = `b${++this.barrierSeq}`;
    const file = join(this.barrierDir, name);
    let timer: NodeJS.Timeout | undefined;
    const seen = await new Promise<boolean>((resolve) => {
      this.barrierWaiters.set(name, () => resolve(true));
      timer = setTimeout(() => resolve(false), SETTLE_TIMEOUT_MS);
      writeFile(file, "").catch(() => resolve(false));
    });
    clearTimeout(timer);
    this.barrierWaiters.delete(name);
    await rm(file, { force: true }).catch(() => {});
    if (!seen) this.unknown = true;
    await this.drain();
    if ((await identity(this.root)) !== this.rootId) this.fail();
  }

  /** Whether nothing changed since the last take (call after `settle`); the changes stay to be taken. */
  quiet(): boolean {
    return !this.broken && !this.unknown && this.paths.size === 0 && !this.overflowRisk();
  }

  /** What changed since the last take (call after `settle`); collecting starts afresh. */
  take(): TreeChanges {
    const out: TreeChanges =
      this.broken || this.unknown || this.overflowRisk()
        ? UNKNOWN
        : this.paths.size === 0
          ? NONE
          : { kind: "paths", paths: [...this.paths].sort() };
    this.unknown = false;
    this.paths = new Set();
    this.pathBytes = 0;
    this.deliveredAtTake = delivered;
    return out;
  }

  /** The next take is unknown (the tree or the index was rewritten by other means). */
  forget(): void {
    this.unknown = true;
  }

  close(): void {
    if (this.counted) trees--;
    this.counted = false;
    this.closed = true;
    for (const w of this.dirs.values()) w.close();
    watchedTotal -= this.dirs.size;
    this.dirs.clear();
    this.barrier?.close();
    this.barrier = null;
    for (const wake of this.barrierWaiters.values()) wake();
  }

  // ---- internals -------------------------------------------------------------------------------------

  private overflowRisk(): boolean {
    return delivered - this.deliveredAtTake >= QUEUE_GUARD;
  }

  private fail(): void {
    this.failed = true;
    this.unknown = true;
  }

  private track(p: Promise<void>): Promise<void> {
    const done = p.catch(() => this.fail()).finally(() => this.pending.delete(done));
    this.pending.add(done);
    return done;
  }

  private async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Watches `rel` (then reads it) and every directory below it. */
  private async watchTree(rel: string): Promise<void> {
    if (this.broken || this.dirs.has(rel)) return;
    if (this.dirs.size >= this.limits.maxDirs || watchedTotal >= TOTAL_BUDGET) return this.fail();
    const abs = rel ? join(this.root, rel) : this.root;
    let w: FSWatcher;
    try {
      w = watch(abs, { persistent: false }, (type, name) => this.onEvent(rel, type, name));
    } catch (err) {
      // Gone (or no longer a directory) already: its parent's watch reports that. Anything else (the inotify
      // limit): the tree is not covered.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") this.fail();
      return;
    }
    w.on("error", () => this.fail());
    this.dirs.set(rel, w);
    watchedTotal++;
    let entries: Dirent[];
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch {
      return; // vanished meanwhile: its parent reports it
    }
    const below = entries
      .filter((e) => e.isDirectory() && this.enters(e.name))
      .map((e) => (rel ? `${rel}/${e.name}` : e.name));
    await Promise.all(below.map((d) => this.watchTree(d)));
  }

  private enters(name: string): boolean {
    return name !== ".git" && !this.excludedNames.has(name);
  }

  private onEvent(dir: string, type: string, name: string | Buffer | null): void {
    delivered++;
    if (this.closed) return;
    if (typeof name !== "string" || name.includes("\uFFFD")) {
      this.unknown = true;
      return;
    }
    const path = dir ? `${dir}/${name}` : name;
    if (name === ".gitignore") this.unknown = true;
    else if (!this.unknown && !this.paths.has(path)) {
      this.paths.add(path);
      this.pathBytes += path.length + 1;
      if (this.paths.size > this.limits.maxPaths || this.pathBytes > this.limits.maxPathBytes)
        this.unknown = true;
    }
    // Something appeared, vanished or was renamed at `path`. (A watch's event about its own directory names the
    // directory itself, as if it were inside: a path that does not exist, which costs nothing.)
    if (type === "rename") void this.track(this.renamed(path, name));
  }

  private async renamed(path: string, name: string): Promise<void> {
    // A watched directory moved or went: its watches (and those below) would report under the old name, or
    // nothing. They go, and what stands there now is watched afresh (`settle` waits for it). Nothing is lost
    // meanwhile: the old name is a changed path, and so is the new one (its parent's watch names it), which
    // covers whatever happened below it before its own watches were in place.
    if (this.dirs.has(path)) this.unwatch(path);
    if (!this.enters(name)) return;
    const st = await lstat(join(this.root, path)).catch(() => null);
    if (st?.isDirectory()) await this.watchTree(path);
  }

  private unwatch(prefix: string): void {
    for (const [rel, w] of this.dirs) {
      if (rel === prefix || rel.startsWith(`${prefix}/`)) {
        w.close();
        this.dirs.delete(rel);
        watchedTotal--;
      }
    }
  }
}

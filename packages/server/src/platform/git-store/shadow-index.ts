/**
 * The store's own index (the private staging area every scan brings in line with the work tree) and what is
 * known of it, so that unchanged trees cost little: the tree the index holds, remembered with the index file's
 * identity (a scan that changed nothing needs no write-tree, even when its status rewrote the index with fresh stat
 * data); how long the last scan took; the walk taken right before the last scan (a small tree is checked for
 * changes without git); and, after a large write (many files hashed, a restore), a refresh of the index once the
 * clock has left the second it was written in, in the background (files written in the index's second are
 * "racily clean": git reads them again on every scan until the index is rewritten in a later second; after a small
 * write the next scan does that).
 *
 * The untracked cache. The scan's `git status` keeps, in the index, what each directory held and its stat data,
 * and reads again only the directories whose stat data changed. git compares whole seconds: a directory changed
 * in the second its listing was read keeps the same stat data, so git treats a directory whose mtime is not older
 * than the index file ("racy") as changed. That leaves one race open: a directory read in second S, changed again
 * later in S, and an index written in S+1 or later (by the same status, or by the update-index or write-tree
 * after it) would hide the change until the directory changes again. So an index written in a later second than
 * the latest status started in gets that second back as its mtime (`seal`): whatever was read since is racy
 * again, and read again by the next status (which rewrites the index then). An older index mtime only makes git
 * look more carefully, at files as at directories.
 *
 * Calls come from the owning ShadowRepo under its lock; the background refresh takes the same lock.
 */
import { stat, utimes } from "node:fs/promises";
import { join } from "node:path";
import type { AsyncLock } from "../../kernel/lock.js";
import type { CheckpointOptions, SkippedFile } from "../../model/checkpoints.js";
import type { Git } from "./git.js";
import {
  BULK_FILES,
  STATUS_ARGS,
  scanIntoIndex,
  snapshotTree,
  type TreeSnapshot,
  unchangedSince,
} from "./scan.js";

/**
 * A tree of up to this many entries is first checked for changes with a walk in this process (`unchangedSince`),
 * which costs less than the git process of a scan; a larger one is scanned directly.
 */
const QUICK_CHECK_MAX_ENTRIES = 1500;
/** How far before the last scan's snapshot a change still counts as after it (coarse file timestamps). */
const QUICK_CHECK_MARGIN_MS = 100;
/**
 * A large index write is followed by a refresh once the clock is past the second it was written in (git compares
 * timestamps in whole seconds: a file changed in that second is "racily clean" until the index is written later).
 */
const refreshDelay = () => 1050 - (Date.now() % 1000);
/**
 * The background refresh: a status like the scan's (the same untracked-cache mode), whose output nobody reads;
 * `--short` tells it apart in a trace.
 */
const REFRESH_ARGS = ["status", "--short", ...STATUS_ARGS.slice(3)];

export class ShadowIndex {
  private recheckIgnored = true;
  /**
   * The tree the index is known to hold (what write-tree would answer), with the index file's identity when that
   * was learnt: a scan that changed nothing needs no write-tree. Forgotten when the file changed under us.
   */
  private indexTree: { tree: string; stamp: string } | null = null;
  /** How long the last scan took (a large tree scans slowly). */
  private lastScanMs = 0;
  /**
   * The index was written with many files and may hold as many "racily clean" entries (files changed within the
   * same second as the index was written, which git must read again on every scan until the index is rewritten
   * later): it is refreshed once, a little later, in the background.
   */
  private refreshTimer: NodeJS.Timeout | null = null;
  /** The work tree as walked right before the last scan, and the tree that scan found: the quick check's base. */
  private lastScan: { snapshot: TreeSnapshot | null; tree: string } | null = null;
  /** The second (wall clock, Unix seconds) in which the latest status started; null before the first one. */
  private statusSecond: number | null = null;
  /** Closed (server shutdown): no background refresh any more. */
  private closed = false;
  /** The store was deleted: a refresh already due does nothing. */
  private destroyed = false;

  constructor(
    private readonly git: Git,
    /** The owning ShadowRepo's lock (the background refresh runs under it). */
    private readonly lock: AsyncLock,
    private readonly opts: CheckpointOptions,
    private readonly excludedNames: ReadonlySet<string>,
  ) {}

  /** How long the last scan took (ms). */
  get scanMs(): number {
    return this.lastScanMs;
  }

  /** The work tree walked now (null: too large, or unreadable), to be remembered with the scan that follows. */
  snapshot(): TreeSnapshot | null {
    return snapshotTree(this.git.workTree, this.excludedNames, QUICK_CHECK_MAX_ENTRIES);
  }

  /** The scan after `snapshot` found `tree`: the next quick check compares with them. */
  rememberScan(snapshot: TreeSnapshot | null, tree: string): void {
    this.lastScan = { snapshot, tree };
  }

  /**
   * Whether the work tree is still the latest checkpoint's without a scan: the last scan found that tree, the
   * latest checkpoint (`latestTree`, asked only when there is a walk to compare with) holds it, and a small tree
   * looks as it did right before that scan.
   */
  async unchangedSinceScan(latestTree: () => Promise<string | undefined>): Promise<boolean> {
    const last = this.lastScan;
    if (!last?.snapshot || (await latestTree()) !== last.tree) return false;
    return unchangedSince(
      this.git.workTree,
      last.snapshot,
      this.excludedNames,
      QUICK_CHECK_MAX_ENTRIES,
      QUICK_CHECK_MARGIN_MS,
    );
  }

  /**
   * Brings the index in line with the work tree: what was left out, and how many paths the index was given (0: it
   * holds the tree it held before).
   */
  async scan(): Promise<{ skipped: SkippedFile[]; updated: number }> {
    const started = performance.now();
    const known =
      this.indexTree && this.indexTree.stamp === (await this.indexStamp()) ? this.indexTree : null;
    const { skipped, updated } = await scanIntoIndex(
      this.git,
      {
        maxFileBytes: this.opts.maxFileBytes,
        retries: this.opts.retries,
        excludedNames: this.excludedNames,
        status: async (args) => (await this.status(args)).stdout,
        beforeIndexUpdate: this.opts.beforeIndexUpdate,
      },
      this.recheckIgnored,
    ).finally(() => this.seal());
    // A status that rewrote the index changed stat data only: the tree it holds is still known.
    if (updated === 0 && known) await this.knowIndex(known.tree);
    else if (updated > 0) this.indexTree = null;
    // Many files written in the index's second would be read again by every scan until the index is rewritten in a
    // later second: the refresh does that soon. A few are left to the next scan (which rewrites the index then).
    if (updated >= BULK_FILES) this.refreshSoon();
    this.recheckIgnored = false;
    this.lastScanMs = performance.now() - started;
    return { skipped, updated };
  }

  /** The tree the index holds (written to the store). */
  async writeTree(): Promise<string> {
    const known = this.indexTree;
    if (known && known.stamp === (await this.indexStamp())) return known.tree;
    const tree = (await this.git.text(["write-tree"])).trim();
    await this.seal();
    await this.knowIndex(tree);
    return tree;
  }

  /**
   * Makes the work tree and the index `tree` (a restore, a fork): git rewrites only what differs from what the
   * index holds and deletes only files it holds. Then `written` (a hook that may change owners), after which the
   * index's stat data are read again.
   */
  async checkOut(tree: string, written: (() => Promise<void>) | undefined): Promise<void> {
    // `--reset` also replaces untracked files that stand where the tree has a file.
    await this.git.run(["read-tree", "-u", "--reset", tree]);
    if (written) {
      await written();
      await this.git.run(["update-index", "-q", "--refresh"], { okCodes: [1] });
    }
    await this.seal();
    await this.knowIndex(tree);
    this.refreshSoon();
  }

  /** The index now holds `tree`. */
  async knowIndex(tree: string): Promise<void> {
    this.indexTree = { tree, stamp: await this.indexStamp() };
  }

  /** Schedules the refresh of a freshly written index (see `refreshTimer`). */
  refreshSoon(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    if (this.closed) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      void this.lock
        .run(async () => {
          if (this.destroyed || this.closed) return;
          const known = this.indexTree;
          const stamp = known ? await this.indexStamp() : null;
          // Rewrites the index with current stat data and directories read again: racily clean entries and racy
          // directories become clean for good.
          await this.status(REFRESH_ARGS);
          await this.seal();
          // Same content: the tree it holds is still known.
          if (known && known.stamp === stamp) await this.knowIndex(known.tree);
        })
        .catch(() => {}); // best effort: the next scan is only slower
    }, refreshDelay());
    this.refreshTimer.unref();
  }

  /** Server shutdown: the pending refresh is dropped, and none is scheduled any more. */
  close(): void {
    this.closed = true;
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
  }

  /** The store is being deleted: the pending refresh is dropped (one already waiting for the lock does nothing). */
  destroy(): void {
    this.destroyed = true;
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
  }

  /** Runs a status (see `seal`). */
  private status(args: readonly string[]) {
    this.statusSecond = Math.floor(Date.now() / 1000);
    return this.git.run(args);
  }

  /**
   * An index written in a later second than the latest status started in gets that second back as its mtime (see
   * the header): what the status read is racy again. Called once an operation has written the index, before any
   * other status can read it (only a status uses the untracked cache).
   */
  private async seal(): Promise<void> {
    if (this.statusSecond === null) return;
    const path = join(this.git.gitDir, "index");
    const st = await stat(path).catch(() => null);
    if (st && Math.floor(st.mtimeMs / 1000) > this.statusSecond)
      await utimes(path, st.atime, this.statusSecond);
  }

  /** Identity of the index file as it is now (any rewrite changes it). */
  private async indexStamp(): Promise<string> {
    const st = await stat(join(this.git.gitDir, "index"), { bigint: true }).catch(() => null);
    return st ? `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : "none";
  }
}

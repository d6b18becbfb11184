/**
 * The store's own index (the private staging area every scan brings in line with the work tree) and what is
 * known of it, so that unchanged trees cost little: the tree the index holds, remembered with the index file's
 * identity (a scan that changed nothing needs no write-tree); how long the last scan took (a large tree is listed
 * by two git processes at once); the walk taken right before the last scan (a small tree is checked for changes
 * without git); and the refresh of a freshly written index once the clock has left the second it was written in,
 * in the background (files written in the index's second are "racily clean": git reads them again on every scan
 * until the index is rewritten later).
 *
 * Calls come from the owning ShadowRepo under its lock; the background refresh takes the same lock.
 */
import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { AsyncLock } from "../../kernel/lock.js";
import type { CheckpointOptions, SkippedFile } from "../../model/checkpoints.js";
import type { Git } from "./git.js";
import { scanIntoIndex, snapshotTree, type TreeSnapshot, unchangedSince } from "./scan.js";

/** A scan slower than this lists changed and new files with two processes at once. */
const SPLIT_AFTER_MS = 15;
/**
 * A tree of up to this many entries is first checked for changes with a walk in this process (`unchangedSince`),
 * which costs less than the git process of a scan; a larger one is scanned directly.
 */
const QUICK_CHECK_MAX_ENTRIES = 1500;
/** How far before the last scan's snapshot a change still counts as after it (coarse file timestamps). */
const QUICK_CHECK_MARGIN_MS = 100;
/**
 * An index write is followed by a refresh once the clock is past the second it was written in (git compares
 * timestamps in whole seconds: a file changed in that second is "racily clean" until the index is written later).
 */
const refreshDelay = () => 1050 - (Date.now() % 1000);

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
   * The index was written and may hold "racily clean" entries (files changed within the same second as the index
   * was written, which git must read again on every scan until the index is rewritten later): it is refreshed once,
   * a little later, in the background.
   */
  private refreshTimer: NodeJS.Timeout | null = null;
  /** The work tree as walked right before the last scan, and the tree that scan found: the quick check's base. */
  private lastScan: { snapshot: TreeSnapshot | null; tree: string } | null = null;
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

  /** Brings the index in line with the work tree; what was left out. */
  async scan(): Promise<SkippedFile[]> {
    const started = performance.now();
    const { skipped, indexChanged } = await scanIntoIndex(
      this.git,
      {
        maxFileBytes: this.opts.maxFileBytes,
        retries: this.opts.retries,
        excludedNames: this.excludedNames,
        split: this.lastScanMs >= SPLIT_AFTER_MS,
        beforeIndexUpdate: this.opts.beforeIndexUpdate,
      },
      this.recheckIgnored,
    );
    if (indexChanged) {
      this.indexTree = null;
      this.refreshSoon();
    }
    this.recheckIgnored = false;
    this.lastScanMs = performance.now() - started;
    return skipped;
  }

  /** The tree the index holds (written to the store). */
  async writeTree(): Promise<string> {
    const known = this.indexTree;
    if (known && known.stamp === (await this.indexStamp())) return known.tree;
    const tree = (await this.git.text(["write-tree"])).trim();
    await this.knowIndex(tree);
    return tree;
  }

  /** A restore's or fork's `written` hook, then the index's stat data read again (the hook may change owners). */
  async afterWrite(written: (() => Promise<void>) | undefined): Promise<void> {
    if (!written) return;
    await written();
    await this.git.run(["update-index", "-q", "--refresh"], { okCodes: [1] });
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
          // Rewrites the index with current stat data: racily clean entries become clean for good.
          await this.git.run(["update-index", "-q", "--refresh"], { okCodes: [1] });
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

  /** Identity of the index file as it is now (any rewrite changes it). */
  private async indexStamp(): Promise<string> {
    const st = await stat(join(this.git.gitDir, "index"), { bigint: true }).catch(() => null);
    return st ? `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : "none";
  }
}

/**
 * The store's own index (the private staging area every scan brings in line with the work tree) and what is
 * known of it, so that unchanged trees cost little: the tree the index holds, remembered with the index file's
 * identity (a scan that changed nothing needs no write-tree); how long the last full scan took (a large tree is
 * listed by two git processes at once, and watched); the walk taken right before the last scan (a small tree is
 * checked for changes without git); the watch of a large tree (tree-watch.ts: a scan lists only what changed, or
 * nothing); the excluded paths last listed (kept while no change touches them); and the refresh of a freshly
 * written index once the clock has left the second it was written in, in the background (files written in the
 * index's second are "racily clean": git reads them again on every scan until the index is rewritten later).
 *
 * Calls come from the owning ShadowRepo under its lock; the background refresh takes the same lock.
 */
import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { AsyncLock } from "../../kernel/lock.js";
import type { CheckpointOptions, SkippedFile } from "../../model/checkpoints.js";
import { excludedPaths } from "./commits.js";
import type { Git } from "./git.js";
import { scanIntoIndex, snapshotTree, type TreeSnapshot, unchangedSince } from "./scan.js";
import { type TreeChanges, TreeWatch } from "./tree-watch.js";

/** A scan slower than this lists changed and new files with two processes at once. */
const SPLIT_AFTER_MS = 15;
/**
 * A tree of up to this many entries is first checked for changes with a walk in this process (`unchangedSince`),
 * which costs less than the git process of a scan; a larger one is scanned directly.
 */
const QUICK_CHECK_MAX_ENTRIES = 1500;
/** A full scan at least this slow (a large tree) starts a watch of the tree, and lists excluded paths alongside. */
const WATCH_AFTER_MS = 25;
/** After a watch could not be kept (too many directories, the inotify limit), the next try waits this long. */
const WATCH_RETRY_MS = 10 * 60_000;
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
  /** How long the last full scan took (a large tree scans slowly). */
  private lastScanMs = 0;
  /** What the last scan left out (a scan with nothing to list answers it again). */
  private lastSkipped: SkippedFile[] = [];
  /** The watch of a large tree (null: none yet, not wanted, or it could not be kept). */
  private watch: TreeWatch | null = null;
  private watchStarting = false;
  private watchRetryAt = 0;
  /**
   * The excluded paths last listed, while no change since touched them (a changed path that is excluded, or lies
   * under, over or at a listed one, and every full scan, forget them).
   */
  private excluded: Promise<string[]> | null = null;
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

  /** How long the last full scan took (ms). */
  get scanMs(): number {
    return this.lastScanMs;
  }

  /** Whether a watch covers the tree. */
  get watched(): boolean {
    return this.watch !== null && !this.watch.broken;
  }

  /** The work tree walked now (null: too large, or unreadable), to be remembered with the scan that follows. */
  snapshot(): TreeSnapshot | null {
    return snapshotTree(this.git.workTree, this.excludedNames, QUICK_CHECK_MAX_ENTRIES);
  }

  /**
   * The scan after `snapshot` found `tree`: the next quick check compares with them. A tree too large for the
   * quick check (no snapshot) whose full scan was slow is watched from now on.
   */
  rememberScan(snapshot: TreeSnapshot | null, tree: string): void {
    this.lastScan = { snapshot, tree };
    const wanted =
      this.opts.watchAfterMs === undefined
        ? snapshot === null && this.lastScanMs >= WATCH_AFTER_MS
        : this.lastScanMs >= this.opts.watchAfterMs;
    if (wanted) this.maybeWatch();
  }

  /**
   * Whether the work tree is still the latest checkpoint's without a scan: the last scan found that tree, the
   * latest checkpoint (`latestTree`) holds it, and a watched tree saw no change since (a small one looks as it
   * did right before that scan).
   */
  async unchangedSinceScan(latestTree: () => Promise<string | undefined>): Promise<boolean> {
    const last = this.lastScan;
    if (!last || this.recheckIgnored) return false;
    const watch = this.watch;
    if (watch && !watch.broken) {
      if ((await latestTree()) !== last.tree || !(await this.indexIsOurs())) return false;
      await watch.settle();
      return watch.quiet();
    }
    if (!last.snapshot || (await latestTree()) !== last.tree) return false;
    return unchangedSince(
      this.git.workTree,
      last.snapshot,
      this.excludedNames,
      QUICK_CHECK_MAX_ENTRIES,
      QUICK_CHECK_MARGIN_MS,
    );
  }

  /**
   * Brings the index in line with the work tree; what was left out. A watched tree lists only what changed since
   * the last scan (or nothing). `prefetchExcluded`: a checkpoint is likely to follow, and a full scan of a large
   * tree lists the excluded paths alongside.
   */
  async scan(prefetchExcluded = false): Promise<SkippedFile[]> {
    const changes = await this.changesSinceScan();
    if (changes.kind === "none") return this.lastSkipped;
    try {
      return await this.scanChanges(changes.kind === "paths" ? changes.paths : undefined, prefetchExcluded);
    } catch (err) {
      // The changes were taken from the watch but not all brought in: the next scan lists the whole tree.
      this.watch?.forget();
      throw err;
    }
  }

  /** Brings the index in line with the work tree, or (`only`) with these paths of it. */
  private async scanChanges(
    only: readonly string[] | undefined,
    prefetchExcluded: boolean,
  ): Promise<SkippedFile[]> {
    const started = performance.now();
    let probe: Promise<string[]> | undefined;
    if (only && !this.excluded) {
      if (prefetchExcluded) this.excluded = this.listExcluded();
    } else if (only) {
      // Whether a changed path is (or was) excluded: then the listing of excluded paths is taken afresh.
      probe = excludedPaths(this.git, only);
      probe.catch(() => {});
    } else {
      this.excluded = null;
      if (prefetchExcluded && this.lastScanMs >= WATCH_AFTER_MS) this.excluded = this.listExcluded();
    }
    const { skipped, indexChanged } = await scanIntoIndex(
      this.git,
      {
        maxFileBytes: this.opts.maxFileBytes,
        retries: this.opts.retries,
        excludedNames: this.excludedNames,
        split: this.lastScanMs >= SPLIT_AFTER_MS,
        ...(only ? { only } : {}),
        beforeIndexUpdate: this.opts.beforeIndexUpdate,
      },
      this.recheckIgnored,
    );
    if (indexChanged) {
      this.indexTree = null;
      this.refreshSoon();
    }
    this.recheckIgnored = false;
    if (only) {
      this.lastSkipped = mergeSkipped(this.lastSkipped, skipped, only);
      if (probe && this.excluded) {
        const listed = await this.excluded.catch(() => null);
        // A probe that failed cannot vouch for the listing either.
        if (
          await probe.then(
            (p) => touchesExcluded(p, listed, only),
            () => true,
          )
        ) {
          this.excluded = prefetchExcluded ? this.listExcluded() : null;
        }
      }
      return this.lastSkipped;
    }
    this.lastScanMs = performance.now() - started;
    this.lastSkipped = skipped;
    return skipped;
  }

  /** The paths .gitignore and the exclude list leave out (as a checkpoint records them). */
  excludedPaths(): Promise<string[]> {
    this.excluded ??= this.listExcluded();
    return this.excluded;
  }

  /** The work tree or the index was rewritten by other means than a scan (a restore): the next scan is full. */
  rewritten(): void {
    this.watch?.forget();
    this.excluded = null;
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
    this.stopWatch();
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
  }

  /** The store is being deleted: the pending refresh is dropped (one already waiting for the lock does nothing). */
  destroy(): void {
    this.destroyed = true;
    this.stopWatch();
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
  }

  /** What changed since the last scan, as the watch saw it (unknown: no watch, or the index is not ours alone). */
  private async changesSinceScan(): Promise<TreeChanges> {
    const watch = this.watch;
    if (!watch || this.recheckIgnored) return { kind: "unknown" };
    if (watch.broken) {
      this.stopWatch();
      this.watchRetryAt = Date.now() + WATCH_RETRY_MS;
      return { kind: "unknown" };
    }
    const ours = await this.indexIsOurs();
    await watch.settle();
    const changes = watch.take();
    return ours ? changes : { kind: "unknown" };
  }

  /**
   * Whether the index is the one this object last wrote or read (the tree it holds is known, and the file did
   * not change since): a store another process also scans cannot trust this process's watch.
   */
  private async indexIsOurs(): Promise<boolean> {
    const known = this.indexTree;
    return known !== null && known.stamp === (await this.indexStamp());
  }

  /** A watch starts in the background (the next full scan arms it). */
  private maybeWatch(): void {
    if (this.watch || this.watchStarting || !this.opts.watch || this.closed || this.destroyed) return;
    if (Date.now() < this.watchRetryAt) return;
    this.watchStarting = true;
    void TreeWatch.start(this.git.workTree, this.excludedNames, join(this.git.gitDir, "watch"))
      .then((watch) => {
        if (!watch) this.watchRetryAt = Date.now() + WATCH_RETRY_MS;
        else if (this.closed || this.destroyed) watch.close();
        else this.watch = watch;
      })
      .finally(() => {
        this.watchStarting = false;
      });
  }

  private stopWatch(): void {
    this.watch?.close();
    this.watch = null;
  }

  private listExcluded(): Promise<string[]> {
    const listing = excludedPaths(this.git);
    listing.catch(() => {
      if (this.excluded === listing) this.excluded = null;
    });
    return listing;
  }

  /** Identity of the index file as it is now (any rewrite changes it). */
  private async indexStamp(): Promise<string> {
    const st = await stat(join(this.git.gitDir, "index"), { bigint: true }).catch(() => null);
    return st ? `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : "none";
  }
}

/** A path at, under or over an excluded entry ("dir/" for a whole directory), or excluded itself. */
function touchesExcluded(probe: string[], listed: string[] | null, changed: readonly string[]): boolean {
  if (probe.length > 0 || listed === null) return true;
  for (const entry of listed) {
    const bare = entry.endsWith("/") ? entry.slice(0, -1) : entry;
    for (const p of changed) {
      if (p === bare || p.startsWith(`${bare}/`) || bare.startsWith(`${p}/`)) return true;
    }
  }
  return false;
}

/** The last scan's list of what was left out, with what a scan of only `changed` found in their place. */
function mergeSkipped(
  last: readonly SkippedFile[],
  found: readonly SkippedFile[],
  changed: readonly string[],
): SkippedFile[] {
  const inChanged = (path: string) => changed.some((p) => path === p || path.startsWith(`${p}/`));
  return [...last.filter((s) => !inChanged(s.path)), ...found].sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
  );
}

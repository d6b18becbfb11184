/**
 * The ShadowRepo: one checkpoint store (a shadow git repository outside the workspace) and the operations on it,
 * serialised by its lock. See index.ts for the whole story. Its parts: opening the store's directory
 * (store-dir.ts), the index and what is known of it (shadow-index.ts), the checkpoint commits and refs
 * (commits.ts), marks (marks.ts), diffs (diff.ts), what a restore changes and whether it may
 * (restore-changes.ts), disk usage (disk-usage.ts).
 */
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { badRequest, conflict, notFound } from "../../kernel/errors.js";
import { AsyncLock } from "../../kernel/lock.js";
import type {
  CheckpointDiff,
  CheckpointInfo,
  CheckpointOptions,
  RecordOptions,
  RecordResult,
  RestoreOptions,
  RestoreResult,
} from "../../model/checkpoints.js";
import {
  CheckpointCommits,
  EMPTY_TREE,
  type Entry,
  ID,
  REF_PREFIX,
  StaleHeadError,
  toInfo,
} from "./commits.js";
import { diffTrees } from "./diff.js";
import { diskUsageOf } from "./disk-usage.js";
import type { Git } from "./git.js";
import { dropMarks, marksPointingAt, readMark, writeMarks } from "./marks.js";
import { checkRestorable, treeChanges } from "./restore-changes.js";
import { ShadowIndex } from "./shadow-index.js";
import { openStore } from "./store-dir.js";

export { diskUsageOf } from "./disk-usage.js";

/** Workspace checkpoints in a shadow git repository; see index.ts for the whole story. */
export class ShadowRepo {
  private readonly lock = new AsyncLock();
  private readonly index: ShadowIndex;
  private readonly commits: CheckpointCommits;
  private destroyed = false;

  private constructor(
    private readonly git: Git,
    private readonly opts: CheckpointOptions,
    excludedNames: ReadonlySet<string>,
  ) {
    this.index = new ShadowIndex(git, this.lock, opts, excludedNames);
    this.commits = new CheckpointCommits(git, opts);
  }

  get gitDir(): string {
    return this.git.gitDir;
  }

  get workspace(): string {
    return this.git.workTree;
  }

  /** Whether a watch covers the workspace (a large tree, once scanned): scans list only what changed. */
  get watched(): boolean {
    return this.index.watched;
  }

  /** Opens the store at `gitDir` (created when missing; it must lie outside the workspace) for `workspace`. */
  static async open(
    gitDir: string,
    workspace: string,
    options: Partial<CheckpointOptions> = {},
  ): Promise<ShadowRepo> {
    const { git, opts, excludedNames, fresh } = await openStore(gitDir, workspace, options);
    const repo = new ShadowRepo(git, opts, excludedNames);
    // An index written by an earlier process may hold racily clean entries.
    if (!fresh) repo.index.refreshSoon();
    return repo;
  }

  /** Records the workspace as a checkpoint; null when nothing changed since the latest one. */
  async checkpoint(label: string, meta: Record<string, string> = {}): Promise<CheckpointInfo | null> {
    return (await this.record(() => ({ label, meta }))).created;
  }

  /**
   * Records the workspace as a checkpoint when it changed since the latest one (or always, with `force`), and
   * answers the latest checkpoint either way. `describe` names it (`first`: there was no checkpoint before). Marks
   * given in `opts` are set in the same step (see `mark`).
   */
  async record(
    describe: (first: boolean) => { label: string; meta: Record<string, string> },
    opts: RecordOptions = {},
  ): Promise<RecordResult> {
    const result = await this.recordTree(describe, opts);
    const latest = result.head;
    if (!opts.marks || !latest) return result;
    // The marks are written right behind (operations run in order: anything asked for after this call sees them),
    // so the caller does not wait for them.
    const marks = opts.marks;
    return { ...result, marked: this.exclusive(() => writeMarks(this.git.gitDir, marks, latest.id)) };
  }

  private recordTree(
    describe: (first: boolean) => { label: string; meta: Record<string, string> },
    opts: RecordOptions,
  ): Promise<RecordResult> {
    return this.exclusive(async () => {
      if (opts.unchanged || (!opts.force && (await this.quietSinceLastScan()))) {
        const head = await this.commits.head();
        return { created: null, head: head ? toInfo(head) : null };
      }
      // Walked before the scan: anything that changes meanwhile differs from it later, and is scanned again then.
      const snapshot = this.index.snapshot();
      // On a large tree the listing of excluded paths (needed only when a checkpoint is written) takes as long as
      // a full scan: when a change is likely, it runs alongside the scan.
      const skipped = await this.index.scan(opts.prefetchExcluded);
      const tree = await this.index.writeTree();
      this.index.rememberScan(snapshot, tree);
      for (let fresh = false; ; fresh = true) {
        const head = await this.commits.head(fresh);
        let created: CheckpointInfo | null = null;
        if (!head || head.tree !== tree || opts.force) {
          const { label, meta } = describe(head === null);
          try {
            created = await this.commits.commit(tree, head, label, meta, skipped, this.index.excludedPaths());
          } catch (err) {
            if (!(err instanceof StaleHeadError) || fresh) throw err;
            continue;
          }
        }
        return { created, head: created ?? (head ? toInfo(head) : null) };
      }
    });
  }

  /** Whether the work tree is still the latest checkpoint's without a scan (see ShadowIndex). */
  private quietSinceLastScan(): Promise<boolean> {
    return this.index.unchangedSinceScan(async () => (await this.commits.head())?.tree);
  }

  /** The latest checkpoint (null before the first one). */
  latest(): Promise<CheckpointInfo | null> {
    return this.exclusive(async () => {
      const head = await this.commits.head(true);
      return head ? toInfo(head) : null;
    });
  }

  /**
   * Points marks (named references kept with the store, e.g. "turns/<id>/after") at checkpoints: `null` stands
   * for the latest one. A mark keeps nothing alive: pruning a checkpoint drops the marks pointing at it.
   */
  mark(marks: Record<string, string | null>): Promise<void> {
    return this.exclusive(async () => {
      const head = await this.commits.head(true);
      for (const id of Object.values(marks)) if (id !== null) await this.commits.require(id);
      if (Object.values(marks).includes(null) && !head) throw notFound("There is no checkpoint yet");
      await writeMarks(this.git.gitDir, marks, head?.id ?? "");
    });
  }

  /** The checkpoint a mark points at (undefined: no such mark, or its checkpoint was pruned). */
  markTarget(name: string): Promise<CheckpointInfo | undefined> {
    return this.exclusive(async () => {
      const id = await readMark(this.git, name);
      const entry = id ? await this.commits.entry(id) : undefined;
      return entry ? toInfo(entry) : undefined;
    });
  }

  /** Deletes every mark under `prefix` (e.g. a deleted session's). Returns how many. */
  dropMarks(prefix: string): Promise<number> {
    return this.exclusive(() => dropMarks(this.git, prefix));
  }

  /** Whether the workspace differs from checkpoint `id` (default: the latest; true when there is none). */
  changedSince(id?: string): Promise<boolean> {
    return this.exclusive(async () => {
      const base = id === undefined ? await this.commits.head() : await this.commits.require(id);
      await this.index.scan();
      return base === null || (await this.index.writeTree()) !== base.tree;
    });
  }

  /** Every checkpoint, oldest first. */
  list(): Promise<CheckpointInfo[]> {
    return this.exclusive(async () => (await this.commits.entries()).map(toInfo));
  }

  get(id: string): Promise<CheckpointInfo | undefined> {
    return this.exclusive(async () => {
      const entry = await this.commits.entry(id);
      return entry ? toInfo(entry) : undefined;
    });
  }

  /** Changes from `from` (null: the checkpoint's parent, or nothing for the first one) to `to`. */
  diff(
    from: string | null,
    to: string,
    opts: { patch?: boolean; maxPatchBytes?: number } = {},
  ): Promise<CheckpointDiff> {
    return this.exclusive(async () => {
      const target = await this.commits.require(to);
      let base = EMPTY_TREE;
      if (from !== null) base = (await this.commits.require(from)).tree;
      else if (target.stored.parent !== null) {
        const parent = await this.commits.entry(target.stored.parent);
        if (!parent)
          throw notFound(`The parent of checkpoint ${to} (${target.stored.parent}) has been pruned`);
        base = parent.tree;
      }
      return diffTrees(this.git, base, target.tree, opts);
    });
  }

  /** A file's content at a checkpoint; null when the checkpoint has no file at that path. */
  fileAt(id: string, path: string): Promise<Buffer | null> {
    return this.exclusive(async () => {
      const rel = normalizePath(path);
      const entry = await this.commits.require(id);
      // `<tree>:<path>` takes the path literally (no pathspec magic, no globbing; it never starts with ./).
      const found = await this.git.run(["rev-parse", "--verify", "--quiet", `${entry.tree}:${rel}`], {
        okCodes: [1, 128],
      });
      const oid = found.exitCode === 0 ? found.stdout.toString("utf8").trim() : "";
      if (!ID.test(oid) || (await this.git.text(["cat-file", "-t", oid])).trim() !== "blob") return null;
      return (await this.git.run(["cat-file", "blob", oid])).stdout;
    });
  }

  /**
   * Makes the workspace what it was at checkpoint `id`: files created since are removed, deleted ones come back,
   * unchanged files are not touched. Never removes a `.git` (the workspace's or a nested repository's), nor a
   * file no checkpoint holds (excluded, too large): a restore that would have to is refused (conflict). A safety
   * checkpoint is taken first, so `undo` restores the state before. The session must be idle.
   */
  restore(id: string, opts: RestoreOptions = {}): Promise<RestoreResult> {
    return this.exclusive(async () => {
      const target = await this.commits.require(id);
      const skipped = await this.index.scan();
      const current = await this.index.writeTree();
      const changes = await treeChanges(this.git, current, target.tree);
      await checkRestorable(this.git.workTree, changes);
      if (opts.dryRun) return { changes, safety: null, undo: null, restored: null };
      const head = await this.commits.head(true);
      let before: Entry;
      let safety: CheckpointInfo | null = null;
      if (head && head.tree === current && !opts.forceSafety) before = head;
      else {
        safety = await this.commits.commit(
          current,
          head,
          "before restore",
          { restore_of: id, ...opts.safetyMeta },
          skipped,
          this.index.excludedPaths(),
        );
        before = (await this.commits.entry(safety.id)) as Entry;
      }
      if (changes.length === 0) return { changes, safety, undo: before.id, restored: null };
      // The index holds `current` with fresh stat data, so git rewrites only what differs and deletes only
      // files it holds; `--reset` also replaces untracked files that stand where the target has a file.
      await this.git.run(["read-tree", "-u", "--reset", target.tree]);
      this.index.rewritten();
      await this.index.afterWrite(opts.written);
      await this.index.knowIndex(target.tree);
      this.index.refreshSoon();
      const written = new Set(changes.filter((c) => c.action === "write").map((c) => c.path));
      const restored = await this.commits.commit(
        target.tree,
        before,
        "restore",
        { restored_from: id, ...opts.restoredMeta },
        skipped.filter((s) => !written.has(s.path)),
      );
      return { changes, safety, undo: before.id, restored };
    });
  }

  /**
   * Starts another workspace from checkpoint `id`: opens (creates) the store at `gitDir` for `workspace`, which
   * must be empty, copies the checkpoint's objects into it, writes the checkpoint's files there and records them
   * as its first checkpoint (label and meta given; `written` as a restore's). Nothing of this store or its
   * workspace changes.
   */
  forkInto(
    id: string,
    gitDir: string,
    workspace: string,
    options: Partial<CheckpointOptions>,
    label: string,
    meta: Record<string, string>,
    written?: () => Promise<void>,
  ): Promise<{ repo: ShadowRepo; checkpoint: CheckpointInfo }> {
    return this.exclusive(async () => {
      const source = await this.commits.require(id);
      const repo = await ShadowRepo.open(gitDir, workspace, options);
      const checkpoint = await repo.adopt(this.git.gitDir, source, label, meta, written);
      return { repo, checkpoint };
    });
  }

  /** The other half of `forkInto`, on the new store. */
  private adopt(
    sourceGitDir: string,
    source: Entry,
    label: string,
    meta: Record<string, string>,
    written?: () => Promise<void>,
  ): Promise<CheckpointInfo> {
    return this.exclusive(async () => {
      if (await this.commits.head(true)) throw conflict("The workspace to fork into already has checkpoints");
      const present = await readdir(this.git.workTree);
      if (present.length > 0) throw conflict("The workspace to fork into is not empty");
      // The source's objects are borrowed (alternates) while the tree is written out and recorded, then copied
      // into this store's own pack (repack without -l takes what it borrows), and the borrowing ends: the source
      // may be pruned or deleted later. No fetch: git's local transport would start upload-pack through a shell.
      const alternates = join(this.git.gitDir, "objects", "info", "alternates");
      await mkdir(dirname(alternates), { recursive: true });
      await writeFile(alternates, `${join(sourceGitDir, "objects")}\n`);
      try {
        // An empty index: every file of the tree is written.
        await this.git.run(["read-tree", "-u", "--reset", source.tree]);
        this.index.rewritten();
        await this.index.afterWrite(written);
        await this.index.knowIndex(source.tree);
        this.index.refreshSoon();
        const checkpoint = await this.commits.commit(source.tree, null, label, meta, []);
        await this.git.run(["repack", "-a", "-d", "-q", "--no-write-bitmap-index"]);
        return checkpoint;
      } finally {
        await rm(alternates, { force: true });
      }
    });
  }

  /**
   * Drops checkpoints beyond the newest `keep` and those older than `olderThanSeconds` (never the latest), then
   * reclaims their space. Returns how many were dropped.
   */
  prune(opts: {
    keep?: number;
    olderThanSeconds?: number;
    where?: (checkpoint: CheckpointInfo) => boolean;
  }): Promise<number> {
    return this.exclusive(async () => {
      const all = await this.commits.entries();
      const head = await this.commits.head(true);
      const cutoff = opts.olderThanSeconds === undefined ? null : this.opts.now() - opts.olderThanSeconds;
      const drop = all.filter(
        (e, i) =>
          e.id !== head?.id &&
          ((opts.keep !== undefined && i < all.length - Math.max(0, opts.keep)) ||
            (cutoff !== null && e.stored.created_at < cutoff) ||
            (opts.where?.(toInfo(e)) ?? false)),
      );
      if (drop.length === 0) return 0;
      const marks = await marksPointingAt(this.git, new Set(drop.map((e) => e.id)));
      let commands = drop.map((e) => `delete ${REF_PREFIX}${e.id} ${e.id}\n`).join("");
      for (const ref of marks) commands += `delete ${ref}\n`;
      await this.git.run(["update-ref", "--stdin"], { input: commands });
      await this.compact();
      return drop.length;
    });
  }

  /**
   * Packs the store into one pack and removes unreachable objects, when worth it (256+ loose objects or 8+
   * packs; always with `force`), so it can be called whenever the session is idle. True when it packed.
   */
  repack(opts: { force?: boolean } = {}): Promise<boolean> {
    return this.exclusive(async () => {
      if (!opts.force) {
        const counts = Object.fromEntries(
          (await this.git.text(["count-objects", "-v"]))
            .split("\n")
            .map((line) => line.split(": "))
            .map(([k, v]) => [k, Number(v)]),
        );
        if ((counts.count ?? 0) < 256 && (counts.packs ?? 0) < 8) return false;
      }
      await this.compact();
      return true;
    });
  }

  /** Bytes the store occupies on disk. */
  diskUsage(): Promise<number> {
    return this.exclusive(() => diskUsageOf(this.git.gitDir));
  }

  /**
   * Stops writing (server shutdown): the pending index refresh is dropped and what runs or waits for the store
   * finishes; resolves then. Nothing runs in the background afterwards.
   */
  async close(): Promise<void> {
    this.index.close();
    await this.lock.run(() => undefined);
  }

  /** Deletes the store (the workspace is not touched). The object is unusable afterwards. */
  destroy(): Promise<void> {
    return this.exclusive(async () => {
      this.destroyed = true;
      this.commits.forgetHead();
      this.index.destroy();
      await rm(this.git.gitDir, { recursive: true, force: true });
    });
  }

  // ---- internals -------------------------------------------------------------------------------------

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run(() => {
      if (this.destroyed) throw new Error(`checkpoint store ${this.git.gitDir} has been destroyed`);
      return fn();
    });
  }

  private async compact(): Promise<void> {
    await this.git.run(["pack-refs", "--all", "--prune"]);
    // -a -d: one pack of what refs and the index reach; unreachable objects in older packs go with them.
    await this.git.run(["repack", "-a", "-d", "-q", "--no-write-bitmap-index"]);
    await this.git.run(["prune", "--expire=now"]);
  }
}

/** A workspace-relative path without ".", "..", or empty segments; bad_request otherwise. */
function normalizePath(path: string): string {
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  if (path.includes("\0") || path.startsWith("/") || parts.includes("..") || parts.length === 0) {
    throw badRequest(`Invalid workspace path: ${JSON.stringify(path)}`, "path");
  }
  return parts.join("/");
}

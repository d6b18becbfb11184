import type { Dirent } from "node:fs";
import { lstat, mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { DEFAULT_EXCLUDES, DEFAULT_MAX_FILE_BYTES } from "../../config/checkpoint-defaults.js";
import { badRequest, conflict, notFound } from "../../kernel/errors.js";
import { AsyncLock } from "../../kernel/lock.js";
import type {
  CheckpointDiff,
  CheckpointInfo,
  CheckpointOptions,
  FileChange,
  FileStatus,
  RecordOptions,
  RecordResult,
  RestoreChange,
  RestoreOptions,
  RestoreResult,
  SkippedFile,
  WorkspaceGitState,
} from "../../model/checkpoints.js";
import { Git, GitError, runGit, splitNul } from "./git.js";
import { scanIntoIndex, snapshotTree, type TreeSnapshot, unchangedSince } from "./scan.js";
import { readWorkspaceGit } from "./workspace-git.js";

const HEAD_REF = "refs/checkpoint-head";
const REF_PREFIX = "refs/checkpoints/";
const MARK_PREFIX = "refs/marks/";
/** A mark name: slash-separated components of letters, digits, "_" and "-". */
const MARK_NAME = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/;
const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
const ZERO_ID = "0".repeat(40);
const ID = /^[0-9a-f]{40}$/;
const MAX_SKIPPED = 1000;
const DEFAULT_MAX_PATCH_BYTES = 1024 * 1024;
const FORMAT = "%(objectname)%00%(tree)%00%(contents:body)%00";
/** A scan slower than this (a large tree) lists excluded paths alongside the next scan when asked to. */
const PREFETCH_AFTER_MS = 25;
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

/** What a checkpoint commit's message body holds (the subject line is the label, for `git log` readers). */
interface Stored {
  v: 1;
  seq: number;
  label: string;
  parent: string | null;
  created_at: number;
  meta: Record<string, string>;
  stats: CheckpointInfo["stats"];
  skipped: SkippedFile[];
  skipped_more: number;
  workspace_git: WorkspaceGitState | null;
}

interface Entry {
  id: string;
  tree: string;
  stored: Stored;
}

/** The head ref moved under a checkpoint (another ShadowRepo on the same store). */
class StaleHeadError extends Error {}

const toInfo = ({ id, stored: s }: Entry): CheckpointInfo => ({
  id,
  parent: s.parent,
  created_at: s.created_at,
  label: s.label,
  meta: s.meta,
  stats: s.stats,
  skipped: s.skipped,
  skipped_more: s.skipped_more,
  workspace_git: s.workspace_git,
});

/** Workspace checkpoints in a shadow git repository; see index.ts for the whole story. */
export class ShadowRepo {
  private readonly lock = new AsyncLock();
  private recheckIgnored = true;
  private cachedHead: Entry | null | undefined;
  private destroyed = false;
  /** Closed (server shutdown): no background refresh any more. */
  private closed = false;
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

  private constructor(
    private readonly git: Git,
    private readonly opts: CheckpointOptions,
    private readonly excludedNames: ReadonlySet<string>,
  ) {}

  get gitDir(): string {
    return this.git.gitDir;
  }

  get workspace(): string {
    return this.git.workTree;
  }

  /** Opens the store at `gitDir` (created when missing; it must lie outside the workspace) for `workspace`. */
  static async open(
    gitDir: string,
    workspace: string,
    options: Partial<CheckpointOptions> = {},
  ): Promise<ShadowRepo> {
    const opts: CheckpointOptions = {
      maxFileBytes: options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
      exclude: options.exclude ?? DEFAULT_EXCLUDES,
      retries: options.retries ?? 3,
      git: options.git ?? "git",
      now: options.now ?? (() => Date.now() / 1000),
      beforeIndexUpdate: options.beforeIndexUpdate,
    };
    for (const pattern of opts.exclude) {
      if (/[\r\n]/.test(pattern))
        throw new Error(`exclude pattern with a line break: ${JSON.stringify(pattern)}`);
    }
    const ws = await realpath(workspace);
    if (!(await stat(ws)).isDirectory()) throw new Error(`workspace is not a directory: ${ws}`);
    const dir = await realpathOfMaybeMissing(resolve(gitDir));
    if (within(dir, ws) || within(ws, dir)) {
      throw new Error(
        `the checkpoint store (${dir}) must lie outside the workspace (${ws}) and not contain it`,
      );
    }
    await mkdir(dir, { recursive: true });
    let fresh = false;
    if (!(await exists(join(dir, "HEAD")))) {
      if ((await readdir(dir)).length > 0) throw new Error(`${dir} is neither empty nor a checkpoint store`);
      await runGit(opts.git, ["init", "--bare", "--quiet", "--template=", dir], { cwd: dir });
      fresh = true;
    }
    await mkdir(join(dir, "info"), { recursive: true });
    const exclude = `# checkpoint excludes (written by codex-agent-api)\n${opts.exclude.join("\n")}\n`;
    await writeIfChanged(join(dir, "info", "exclude"), exclude);
    // Highest-precedence attributes: no line-ending, ident, filter or encoding conversion, whatever the
    // workspace's .gitattributes say, so files are stored and restored byte for byte.
    await writeIfChanged(
      join(dir, "info", "attributes"),
      "* -text -eol -ident -filter -working-tree-encoding\n",
    );
    if (!fresh) await rm(join(dir, "index.lock"), { force: true }); // left by a crash: one owner per store
    const names = opts.exclude
      .map((p) => p.replace(/\/$/, ""))
      .filter((p) => p !== "" && !/[/*?[\]!\\]/.test(p) && !p.startsWith("#"));
    const repo = new ShadowRepo(new Git(opts.git, dir, ws), opts, new Set(names));
    // An index written by an earlier process may hold racily clean entries.
    if (!fresh) repo.refreshSoon();
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
    return { ...result, marked: this.exclusive(() => this.writeMarks(marks, latest.id)) };
  }

  private recordTree(
    describe: (first: boolean) => { label: string; meta: Record<string, string> },
    opts: RecordOptions,
  ): Promise<RecordResult> {
    return this.exclusive(async () => {
      if (opts.unchanged || (!opts.force && (await this.quietSinceLastScan()))) {
        const head = await this.head();
        return { created: null, head: head ? toInfo(head) : null };
      }
      // Walked before the scan: anything that changes meanwhile differs from it later, and is scanned again then.
      const snapshot = snapshotTree(this.git.workTree, this.excludedNames, QUICK_CHECK_MAX_ENTRIES);
      // On a large tree the listing of excluded paths (needed only when a checkpoint is written) takes as long as
      // the scan: when a change is likely, it runs alongside the scan.
      const excluded =
        opts.prefetchExcluded && this.lastScanMs >= PREFETCH_AFTER_MS ? this.excludedPaths() : undefined;
      excluded?.catch(() => {});
      const skipped = await this.scan();
      const tree = await this.writeTree();
      this.lastScan = { snapshot, tree };
      for (let fresh = false; ; fresh = true) {
        const head = await this.head(fresh);
        let created: CheckpointInfo | null = null;
        if (!head || head.tree !== tree || opts.force) {
          const { label, meta } = describe(head === null);
          try {
            created = await this.commit(tree, head, label, meta, skipped, excluded);
          } catch (err) {
            if (!(err instanceof StaleHeadError) || fresh) throw err;
            continue;
          }
        }
        return { created, head: created ?? (head ? toInfo(head) : null) };
      }
    });
  }

  /**
   * Whether the work tree is still the latest checkpoint's without a scan: the last scan found that tree, the
   * latest checkpoint holds it, and a small tree looks as it did right before that scan.
   */
  private async quietSinceLastScan(): Promise<boolean> {
    const last = this.lastScan;
    if (!last?.snapshot || (await this.head())?.tree !== last.tree) return false;
    return unchangedSince(
      this.git.workTree,
      last.snapshot,
      this.excludedNames,
      QUICK_CHECK_MAX_ENTRIES,
      QUICK_CHECK_MARGIN_MS,
    );
  }

  /** The latest checkpoint (null before the first one). */
  latest(): Promise<CheckpointInfo | null> {
    return this.exclusive(async () => {
      const head = await this.head(true);
      return head ? toInfo(head) : null;
    });
  }

  /**
   * Points marks (named references kept with the store, e.g. "turns/<id>/after") at checkpoints: `null` stands
   * for the latest one. A mark keeps nothing alive: pruning a checkpoint drops the marks pointing at it.
   */
  mark(marks: Record<string, string | null>): Promise<void> {
    return this.exclusive(async () => {
      const head = await this.head(true);
      for (const id of Object.values(marks)) if (id !== null) await this.require(id);
      if (Object.values(marks).includes(null) && !head) throw notFound("There is no checkpoint yet");
      await this.writeMarks(marks, head?.id ?? "");
    });
  }

  /** The checkpoint a mark points at (undefined: no such mark, or its checkpoint was pruned). */
  markTarget(name: string): Promise<CheckpointInfo | undefined> {
    return this.exclusive(async () => {
      const id = await this.readMark(name);
      const entry = id ? await this.entry(id) : undefined;
      return entry ? toInfo(entry) : undefined;
    });
  }

  /** Deletes every mark under `prefix` (e.g. a deleted session's). Returns how many. */
  dropMarks(prefix: string): Promise<number> {
    return this.exclusive(async () => {
      checkMarkName(prefix);
      const refs = await this.git.lines([
        "for-each-ref",
        "--format=%(refname)%00",
        `${MARK_PREFIX}${prefix}/`,
      ]);
      const names = refs.map((r) => r.replace(/^\n/, "")).filter((r) => r.startsWith(MARK_PREFIX));
      if (names.length === 0) return 0;
      await this.git.run(["update-ref", "--stdin"], { input: names.map((r) => `delete ${r}\n`).join("") });
      return names.length;
    });
  }

  /** Whether the workspace differs from checkpoint `id` (default: the latest; true when there is none). */
  changedSince(id?: string): Promise<boolean> {
    return this.exclusive(async () => {
      const base = id === undefined ? await this.head() : await this.require(id);
      await this.scan();
      return base === null || (await this.writeTree()) !== base.tree;
    });
  }

  /** Every checkpoint, oldest first. */
  list(): Promise<CheckpointInfo[]> {
    return this.exclusive(async () => (await this.entries()).map(toInfo));
  }

  get(id: string): Promise<CheckpointInfo | undefined> {
    return this.exclusive(async () => {
      const entry = await this.entry(id);
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
      const target = await this.require(to);
      let base = EMPTY_TREE;
      if (from !== null) base = (await this.require(from)).tree;
      else if (target.stored.parent !== null) {
        const parent = await this.entry(target.stored.parent);
        if (!parent)
          throw notFound(`The parent of checkpoint ${to} (${target.stored.parent}) has been pruned`);
        base = parent.tree;
      }
      const common = ["-r", "-M", "--no-ext-diff", "--no-textconv", base, target.tree];
      const raw = await this.git.run(["diff-tree", "-z", "--raw", "--numstat", ...common]);
      const result: CheckpointDiff = { files: parseRawNumstat(splitNul(raw.stdout)) };
      if (opts.patch) {
        const maxOutput = opts.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES;
        const patch = await this.git.run(["diff-tree", "-p", "--no-color", ...common], { maxOutput });
        result.patch = patch.stdout.toString("utf8");
        result.truncated = patch.truncated;
      }
      return result;
    });
  }

  /** A file's content at a checkpoint; null when the checkpoint has no file at that path. */
  fileAt(id: string, path: string): Promise<Buffer | null> {
    return this.exclusive(async () => {
      const rel = normalizePath(path);
      const entry = await this.require(id);
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
      const target = await this.require(id);
      const skipped = await this.scan();
      const current = await this.writeTree();
      const changes = await this.treeChanges(current, target.tree);
      await this.checkRestorable(changes);
      if (opts.dryRun) return { changes, safety: null, undo: null, restored: null };
      const head = await this.head(true);
      let before: Entry;
      let safety: CheckpointInfo | null = null;
      if (head && head.tree === current && !opts.forceSafety) before = head;
      else {
        safety = await this.commit(
          current,
          head,
          "before restore",
          { restore_of: id, ...opts.safetyMeta },
          skipped,
        );
        before = (await this.entry(safety.id)) as Entry;
      }
      if (changes.length === 0) return { changes, safety, undo: before.id, restored: null };
      // The index holds `current` with fresh stat data, so git rewrites only what differs and deletes only
      // files it holds; `--reset` also replaces untracked files that stand where the target has a file.
      await this.git.run(["read-tree", "-u", "--reset", target.tree]);
      await this.afterWrite(opts.written);
      await this.knowIndex(target.tree);
      this.refreshSoon();
      const written = new Set(changes.filter((c) => c.action === "write").map((c) => c.path));
      const restored = await this.commit(
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
      const source = await this.require(id);
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
      if (await this.head(true)) throw conflict("The workspace to fork into already has checkpoints");
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
        await this.afterWrite(written);
        await this.knowIndex(source.tree);
        this.refreshSoon();
        const checkpoint = await this.commit(source.tree, null, label, meta, []);
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
      const all = await this.entries();
      const head = await this.head(true);
      const cutoff = opts.olderThanSeconds === undefined ? null : this.opts.now() - opts.olderThanSeconds;
      const drop = all.filter(
        (e, i) =>
          e.id !== head?.id &&
          ((opts.keep !== undefined && i < all.length - Math.max(0, opts.keep)) ||
            (cutoff !== null && e.stored.created_at < cutoff) ||
            (opts.where?.(toInfo(e)) ?? false)),
      );
      if (drop.length === 0) return 0;
      const dropped = new Set(drop.map((e) => e.id));
      const marks = await this.git.lines([
        "for-each-ref",
        "--format=%(refname)%00%(objectname)%00",
        MARK_PREFIX,
      ]);
      let commands = drop.map((e) => `delete ${REF_PREFIX}${e.id} ${e.id}\n`).join("");
      for (let i = 0; i + 1 < marks.length; i += 2) {
        const ref = (marks[i] as string).replace(/^\n/, "");
        if (dropped.has(marks[i + 1] as string)) commands += `delete ${ref}\n`;
      }
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
    return this.exclusive(() => du(this.git.gitDir));
  }

  /**
   * Stops writing (server shutdown): the pending index refresh is dropped and what runs or waits for the store
   * finishes; resolves then. Nothing runs in the background afterwards.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    await this.lock.run(() => undefined);
  }

  /** Deletes the store (the workspace is not touched). The object is unusable afterwards. */
  destroy(): Promise<void> {
    return this.exclusive(async () => {
      this.destroyed = true;
      this.cachedHead = undefined;
      if (this.refreshTimer) clearTimeout(this.refreshTimer);
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

  private async scan(): Promise<SkippedFile[]> {
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
  private async writeTree(): Promise<string> {
    const known = this.indexTree;
    if (known && known.stamp === (await this.indexStamp())) return known.tree;
    const tree = (await this.git.text(["write-tree"])).trim();
    await this.knowIndex(tree);
    return tree;
  }

  /** A restore's or fork's `written` hook, then the index's stat data read again (the hook may change owners). */
  private async afterWrite(written: (() => Promise<void>) | undefined): Promise<void> {
    if (!written) return;
    await written();
    await this.git.run(["update-index", "-q", "--refresh"], { okCodes: [1] });
  }

  /** The index now holds `tree`. */
  private async knowIndex(tree: string): Promise<void> {
    this.indexTree = { tree, stamp: await this.indexStamp() };
  }

  /** Schedules the refresh of a freshly written index (see `refreshTimer`). */
  private refreshSoon(): void {
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

  /** Identity of the index file as it is now (any rewrite changes it). */
  private async indexStamp(): Promise<string> {
    const st = await stat(join(this.git.gitDir, "index"), { bigint: true }).catch(() => null);
    return st ? `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : "none";
  }

  /** Paths .gitignore and the exclude list leave out (whole directories as "dir/"). */
  private excludedPaths(): Promise<string[]> {
    return this.git.lines(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]);
  }

  /** Writes marks as loose references (under the lock, git is not running against this store). */
  private async writeMarks(marks: Record<string, string | null>, latest: string): Promise<void> {
    await Promise.all(
      Object.entries(marks).map(async ([name, id]) => {
        checkMarkName(name);
        const target = id ?? latest;
        if (!ID.test(target)) throw new Error(`not a checkpoint id: ${target}`);
        const path = join(this.git.gitDir, ...`${MARK_PREFIX}${name}`.split("/"));
        await mkdir(dirname(path), { recursive: true });
        const tmp = `${path}.${process.pid}.tmp`;
        await writeFile(tmp, `${target}\n`);
        await rename(tmp, path);
      }),
    );
  }

  private async readMark(name: string): Promise<string | null> {
    checkMarkName(name);
    const found = await this.git.run(["rev-parse", "--verify", "--quiet", `${MARK_PREFIX}${name}^{commit}`], {
      okCodes: [1, 128],
    });
    const id = found.exitCode === 0 ? found.stdout.toString("utf8").trim() : "";
    return ID.test(id) ? id : null;
  }

  /** The latest checkpoint, cached (this object owns the store); `fresh` reads the ref again. */
  private async head(fresh = false): Promise<Entry | null> {
    if (fresh || this.cachedHead === undefined) this.cachedHead = (await this.readRefs(HEAD_REF))[0] ?? null;
    return this.cachedHead;
  }

  private async entries(): Promise<Entry[]> {
    return (await this.readRefs(REF_PREFIX.slice(0, -1))).sort((a, b) => a.stored.seq - b.stored.seq);
  }

  private async entry(id: string): Promise<Entry | undefined> {
    if (!ID.test(id)) return undefined;
    return (await this.readRefs(REF_PREFIX + id))[0];
  }

  private async require(id: string): Promise<Entry> {
    const entry = await this.entry(id);
    if (!entry) throw notFound(`No checkpoint with id ${id}`);
    return entry;
  }

  private async readRefs(pattern: string): Promise<Entry[]> {
    const fields = await this.git.lines(["for-each-ref", `--format=${FORMAT}`, pattern]);
    const out: Entry[] = [];
    for (let i = 0; i + 2 < fields.length; i += 3) {
      const id = (fields[i] as string).replace(/^\n/, "");
      try {
        const stored = JSON.parse(fields[i + 2] as string) as Stored;
        if (stored.v === 1) out.push({ id, tree: fields[i + 1] as string, stored });
      } catch {
        // not a checkpoint commit: ignore it
      }
    }
    return out;
  }

  private async commit(
    tree: string,
    head: Entry | null,
    label: string,
    meta: Record<string, string>,
    scanned: SkippedFile[],
    excludedListing?: Promise<string[]>,
  ): Promise<CheckpointInfo> {
    const parentTree = head?.tree ?? EMPTY_TREE;
    const [numstat, excluded, workspaceGit] = await Promise.all([
      this.git.lines(["diff-tree", "-z", "-r", "--numstat", "--no-renames", parentTree, tree]),
      excludedListing ?? this.excludedPaths(),
      readWorkspaceGit(this.git.workTree),
    ]);
    const stats = { files: 0, insertions: 0, deletions: 0 };
    for (const line of numstat) {
      const [ins, del] = line.split("\t");
      stats.files++;
      stats.insertions += Number(ins) || 0;
      stats.deletions += Number(del) || 0;
    }
    const all: SkippedFile[] = [
      ...scanned,
      ...excluded.map((path) => ({ path, reason: "excluded" as const })),
    ];
    const singleLine = label.replace(/[\r\n\0]+/g, " ").trim() || "checkpoint";
    const stored: Stored = {
      v: 1,
      seq: (head?.stored.seq ?? 0) + 1,
      label: singleLine,
      parent: head?.id ?? null,
      created_at: Math.floor(this.opts.now()),
      meta: { ...meta },
      stats,
      skipped: all.slice(0, MAX_SKIPPED),
      skipped_more: Math.max(0, all.length - MAX_SKIPPED),
      workspace_git: workspaceGit,
    };
    const message = `${singleLine}\n\n${JSON.stringify(stored)}\n`;
    const id = (await this.git.text(["commit-tree", tree], { input: message })).trim();
    const refs = `create ${REF_PREFIX}${id} ${id}\nupdate ${HEAD_REF} ${id} ${head?.id ?? ZERO_ID}\n`;
    try {
      await this.git.run(["update-ref", "--stdin"], { input: refs });
    } catch (err) {
      this.cachedHead = undefined;
      // Another ShadowRepo on this store moved the head since it was read: the caller may retry.
      if (err instanceof GitError && /cannot lock ref/.test(err.stderr)) throw new StaleHeadError();
      throw err;
    }
    this.cachedHead = { id, tree, stored };
    return toInfo({ id, tree, stored });
  }

  private async treeChanges(from: string, to: string): Promise<RestoreChange[]> {
    const fields = await this.git.lines(["diff-tree", "-z", "-r", "--name-status", "--no-renames", from, to]);
    const changes: RestoreChange[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const path = fields[i + 1] as string;
      changes.push({ path, action: fields[i] === "D" ? "delete" : "write" });
    }
    return changes;
  }

  /**
   * Refuses a restore that would make git remove something no checkpoint holds: a directory (with a `.git`,
   * excluded or too-large files…) where the target has a file, or an untracked file where it has a directory.
   */
  private async checkRestorable(changes: RestoreChange[]): Promise<void> {
    const deleted = new Set(changes.filter((c) => c.action === "delete").map((c) => c.path));
    const seen = new Set<string>();
    const root = this.git.workTree;
    for (const change of changes) {
      if (change.action !== "write") continue;
      const parts = change.path.split("/");
      for (let i = 1; i < parts.length; i++) {
        const prefix = parts.slice(0, i).join("/");
        if (seen.has(prefix)) continue;
        seen.add(prefix);
        const st = await lstat(join(root, prefix)).catch(() => null);
        if (st && !st.isDirectory() && !deleted.has(prefix)) {
          throw conflict(`Restore would overwrite ${prefix}, which no checkpoint holds; move it away first`);
        }
      }
      const st = await lstat(join(root, change.path)).catch(() => null);
      if (st?.isDirectory()) {
        const extra = await firstUntracked(root, `${change.path}/`, deleted);
        if (extra)
          throw conflict(`Restore would remove ${extra}, which no checkpoint holds; move it away first`);
      }
    }
  }

  private async compact(): Promise<void> {
    await this.git.run(["pack-refs", "--all", "--prune"]);
    // -a -d: one pack of what refs and the index reach; unreachable objects in older packs go with them.
    await this.git.run(["repack", "-a", "-d", "-q", "--no-write-bitmap-index"]);
    await this.git.run(["prune", "--expire=now"]);
  }
}

/** The first path under `dir` (workspace-relative, ending in "/") that is not in `held`, if any. */
async function firstUntracked(root: string, dir: string, held: ReadonlySet<string>): Promise<string | null> {
  let entries: Dirent[];
  try {
    entries = await readdir(join(root, dir), { withFileTypes: true });
  } catch {
    return null;
  }
  for (const entry of entries) {
    const path = dir + entry.name;
    if (entry.isDirectory() && entry.name !== ".git") {
      const found = await firstUntracked(root, `${path}/`, held);
      if (found) return found;
    } else if (!held.has(path)) {
      return path;
    }
  }
  return null;
}

function parseRawNumstat(fields: string[]): FileChange[] {
  const files: FileChange[] = [];
  let i = 0;
  while (i < fields.length && (fields[i] as string).startsWith(":")) {
    const letter = (fields[i] as string).split(" ")[4]?.[0] ?? "M";
    const twoPaths = letter === "R" || letter === "C";
    const status: FileStatus =
      letter === "A" ? "added" : letter === "D" ? "deleted" : letter === "R" ? "renamed" : "modified";
    const change: FileChange = twoPaths
      ? {
          path: fields[i + 2] as string,
          old_path: fields[i + 1] as string,
          status,
          insertions: 0,
          deletions: 0,
          binary: false,
        }
      : { path: fields[i + 1] as string, status, insertions: 0, deletions: 0, binary: false };
    if (letter === "C") change.status = "added";
    files.push(change);
    i += twoPaths ? 3 : 2;
  }
  for (const change of files) {
    const [ins, del, path] = (fields[i] ?? "").split("\t");
    i += path === "" ? 3 : 1; // a rename's numstat line has an empty path, then the old and new paths
    change.binary = ins === "-";
    change.insertions = Number(ins) || 0;
    change.deletions = Number(del) || 0;
  }
  return files;
}

function checkMarkName(name: string): void {
  if (!MARK_NAME.test(name) || name.endsWith(".lock")) throw new Error(`invalid mark name: ${name}`);
}

/** A workspace-relative path without ".", "..", or empty segments; bad_request otherwise. */
function normalizePath(path: string): string {
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  if (path.includes("\0") || path.startsWith("/") || parts.includes("..") || parts.length === 0) {
    throw badRequest(`Invalid workspace path: ${JSON.stringify(path)}`, "path");
  }
  return parts.join("/");
}

function within(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

async function realpathOfMaybeMissing(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    const parent = dirname(path);
    if (parent === path) return path;
    return join(
      await realpathOfMaybeMissing(parent),
      path.slice(parent.length + (parent.endsWith(sep) ? 0 : 1)),
    );
  }
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

async function writeIfChanged(path: string, content: string): Promise<void> {
  const old = await readFile(path, "utf8").catch(() => null);
  if (old !== content) await writeFile(path, content);
}

/** Bytes a directory tree occupies on disk (blocks). */
export async function diskUsageOf(path: string): Promise<number> {
  return du(path);
}

async function du(path: string): Promise<number> {
  const st = await lstat(path).catch(() => null);
  if (!st) return 0;
  let total = st.blocks !== undefined ? st.blocks * 512 : st.size;
  if (st.isDirectory()) {
    const names = await readdir(path).catch(() => [] as string[]);
    for (const name of names) total += await du(join(path, name));
  }
  return total;
}

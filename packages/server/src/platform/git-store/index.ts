/**
 * Workspace checkpoints (issue 15): snapshots of a session's workspace in a shadow git repository that lives
 * outside the workspace, so shell-made changes, binaries, deletions and renames are all captured, and any
 * checkpoint can be diffed, read or restored. No HTTP and no turn logic here: the caller decides when.
 *
 *   const repo = await ShadowRepo.open(storeDir, workspace, { maxFileBytes, exclude });
 *   await repo.checkpoint("turn 3", { turn_id })   // CheckpointInfo, or null when nothing changed
 *   await repo.record(describe, { marks })         // { created, head }: also names the latest when unchanged
 *   await repo.mark({ "turns/t1/after": null }) / repo.markTarget(name) / repo.dropMarks(prefix)
 *   await repo.changedSince()                      // did the tree change since the latest checkpoint?
 *   await repo.list() / repo.get(id)
 *   await repo.diff(null, id, { patch: true })     // against its parent (or any other checkpoint)
 *   await repo.fileAt(id, "src/a.ts")              // Buffer | null
 *   await repo.restore(id, { dryRun })             // { changes, safety, undo, restored }
 *   await repo.forkInto(id, gitDir2, ws2, ...)     // a new store + workspace starting from checkpoint id
 *   await repo.prune({ keep, olderThanSeconds })   // on expiry / retention; returns how many were dropped
 *   await repo.repack()                            // when idle: packs only when worth it (true if it did)
 *   await repo.diskUsage() / repo.destroy()        // bytes on disk; delete the store on session delete
 *
 * Storage. `git --git-dir=<store> --work-tree=<workspace>`, a bare repository whose own index is the private
 * staging area. A checkpoint is a parentless commit made with write-tree/commit-tree and referenced by
 * `refs/checkpoints/<id>`; `refs/checkpoint-head` names the latest. Label, parent, stats, what was left out
 * and the workspace repository's HEAD/branch travel as JSON in the commit message. Parentless commits keep ids
 * stable when older checkpoints are pruned. The workspace's own `.git` is never read by git nor written.
 *
 * Git hygiene. execFile-style spawns with arguments (no shell); the environment is the server's minus every
 * GIT_* variable, plus GIT_CONFIG_GLOBAL=/dev/null and GIT_CONFIG_NOSYSTEM=1; hooks, fsmonitor, untracked
 * cache, automatic gc, user excludes/attributes and all conversions are off (`-c` on every call and the
 * store's info/attributes); every listing is `-z`.
 *
 * Scan (scan.ts). `ls-files -o -m --exclude-standard` lists new and changed files, honouring .gitignore and
 * the exclude list (written to the store's info/exclude). Every listed file is lstat'ed first: larger than
 * maxFileBytes, unreadable or special files are left out (dropped from the index if they were in it) and
 * recorded in `skipped`, with the excluded paths (`ls-files -o -i --directory`, directories as "dir/").
 * The rest goes to `update-index --add --remove -z --stdin` (a file gone by then is simply dropped); from 64
 * files on, through git's bulk check-in into one pack instead of a loose object per file (10k files: ~1 s).
 * Nested repositories: git reports them as "dir/" and would store a gitlink (or fail when they have no
 * commit), so their files are walked (never their `.git`), filtered with `check-ignore`, and added one by one;
 * once in the index git walks them like any directory. Their `.git` is never touched. When the tree changes
 * under the scan (a listed file became a directory…), the scan starts over, up to `retries` more times.
 *
 * Restore. After a fresh scan the index holds the current tree with fresh stat data; `read-tree -u --reset
 * <target>` then rewrites only what differs, removes only files the index holds and leaves unchanged files
 * alone (same inode and mtime). It therefore never removes a `.git`, an excluded or a too-large file (a file
 * the target holds is written back, though, even over an ignored or too-large file of that name); when the
 * target needs a path where such a thing stands as a directory or a parent, the restore is refused (409
 * conflict). The dry run lists the same changes (and refuses the same way) without touching anything. A safety
 * checkpoint of the current state comes first (`undo`), and one recording the restored tree after
 * (`restored`), so the latest checkpoint always describes the workspace. The session must be idle: a
 * checkpoint taken while the agent writes is not atomic, and a restore would race it.
 *
 * Marks are named references kept in the store (`refs/marks/<name>`, e.g. a turn's "before" and "after"), written
 * as loose refs right behind the operation that set them; pruning a checkpoint drops the marks pointing at it.
 * `forkInto` starts another store and workspace from a checkpoint: the source's objects are borrowed
 * (alternates) while the tree is written out, then copied into the new store's own pack (no fetch: git's local
 * transport would run upload-pack through a shell).
 *
 * Speed. A scan that changed nothing needs no write-tree (the tree the index holds is remembered with the index
 * file's identity); a small tree is listed by one git process, a large one by two at once (tracked files stat'ed,
 * directories walked); the excluded listing a new checkpoint records can run alongside the scan. A large tree is
 * watched once scanned (tree-watch.ts: inotify on every directory): a scan then lists only the paths that changed
 * since the last one (`diff-files` and `ls-files --others` on them), or nothing at all, and the excluded listing is
 * kept while no change touches it; whenever the watch cannot vouch for what it saw, the scan is a full one. After
 * every index write the index is refreshed once the clock has left that second, in the background: files written
 * in the index's second are "racily clean", and git would read them again on every scan until the index is
 * rewritten.
 *
 * The service (features/checkpoints/service.ts) attaches all this to sessions and turns: see its header.
 *
 * Operations on one ShadowRepo are serialised; one process should own a store at a time (the latest checkpoint
 * is cached; a checkpoint made meanwhile through another object is noticed when the head ref moved).
 * Errors: not_found / bad_request / conflict as ApiError (kernel/errors.ts); GitNotFoundError when git is
 * missing; ScanError when the tree never settled; GitError for anything else git refused.
 */

export { DEFAULT_EXCLUDES, DEFAULT_MAX_FILE_BYTES } from "../../config/checkpoint-defaults.js";
export type {
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
  SkipReason,
  WorkspaceGitState,
} from "../../model/checkpoints.js";
export { GitError, GitNotFoundError } from "./git.js";
export { ScanError } from "./scan.js";
export { diskUsageOf, ShadowRepo } from "./shadow-repo.js";

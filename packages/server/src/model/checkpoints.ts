/**
 * The shapes of workspace checkpoints (the shadow git store's records and options): what platform/git-store makes,
 * features/checkpoints serves and the dialects render. The defaults are in config/checkpoint-defaults.ts.
 */
import type { SessionRecord } from "./records.js";

export interface WorkspaceGitState {
  /** The commit the workspace repository's HEAD points at; null on an unborn branch or when unreadable. */
  head: string | null;
  /** The checked-out branch (without refs/heads/); null when HEAD is detached. */
  branch: string | null;
}

export interface CheckpointOptions {
  /** Files larger than this are left out (and listed in `skipped`). Default 10 MiB. */
  maxFileBytes: number;
  /**
   * Gitignore-syntax patterns left out of every checkpoint, on top of the workspace's own .gitignore files.
   * Default DEFAULT_EXCLUDES; pass `[...DEFAULT_EXCLUDES, "*.sqlite"]` to extend it.
   */
  exclude: readonly string[];
  /** Further attempts when the tree changes under the scan (files vanishing, files becoming directories). Default 3. */
  retries: number;
  /** The git executable. Default "git" (from PATH). */
  git: string;
  /** Unix seconds (fractional); the service's Clock fits. Default Date.now()/1000. */
  now: () => number;
  /**
   * Watch a large work tree between scans (inotify), so that a scan lists only what changed. Default true; off
   * for a workspace that other machines change (a network filesystem: inotify sees only this machine's writes).
   */
  watch: boolean;
  /**
   * For tests: watch every tree whose full scan took at least this long (ms), however small. Default: only trees
   * too large for the quick check (over 1500 entries) whose full scan took 25 ms or more.
   */
  watchAfterMs?: number;
  /** For tests: called once per scan attempt, after the tree was listed and before the index is updated. */
  beforeIndexUpdate?: (attempt: number, paths: readonly string[]) => void | Promise<void>;
}

export type SkipReason = "too_large" | "excluded" | "unreadable" | "unsupported";

export interface SkippedFile {
  /** Workspace-relative; a trailing "/" marks a whole directory (excluded ones). */
  path: string;
  /** too_large: over maxFileBytes; excluded: .gitignore or `exclude`; unreadable: no read permission or a
   * name that is not UTF-8; unsupported: a socket, FIFO or device. */
  reason: SkipReason;
  size?: number;
}

export interface CheckpointInfo {
  /** The commit id in the shadow repository. */
  id: string;
  /** The checkpoint that was the latest when this one was made (it may since have been pruned). */
  parent: string | null;
  /** Unix seconds. */
  created_at: number;
  label: string;
  meta: Record<string, string>;
  /** Against `parent` (against an empty tree for the first checkpoint). */
  stats: { files: number; insertions: number; deletions: number };
  /** What was left out (at most 1000 entries: too large and unreadable ones first). */
  skipped: SkippedFile[];
  /** How many more were left out than `skipped` lists. */
  skipped_more: number;
  /** HEAD and branch of the workspace's own repository at the time (a restore brings back files, not HEAD). */
  workspace_git: WorkspaceGitState | null;
}

export type FileStatus = "added" | "modified" | "deleted" | "renamed";

export interface FileChange {
  path: string;
  /** For renames: where the file was before. */
  old_path?: string;
  status: FileStatus;
  /** Line counts; 0 for binary files. */
  insertions: number;
  deletions: number;
  binary: boolean;
}

export interface CheckpointDiff {
  files: FileChange[];
  /** A unified diff (binary files as "Binary files … differ"), only when asked for. */
  patch?: string;
  /** The patch was cut at maxPatchBytes. */
  truncated?: boolean;
}

export interface RestoreChange {
  path: string;
  action: "write" | "delete";
}

export interface RestoreResult {
  /** What the restore changes (or, on a dry run, would change) in the workspace. */
  changes: RestoreChange[];
  /** The checkpoint made of the workspace just before restoring; null when the latest one already matched it. */
  safety: CheckpointInfo | null;
  /** Restore this one to undo the restore (the safety checkpoint or the latest that matched); null on a dry run. */
  undo: string | null;
  /** The checkpoint recording the restored tree; null on a dry run or when nothing changed. */
  restored: CheckpointInfo | null;
}

export interface RecordOptions {
  /** Marks to set once recorded: a checkpoint id, or null for the latest checkpoint (see ShadowRepo.mark). */
  marks?: Record<string, string | null>;
  /** Write a checkpoint even when the tree did not change. */
  force?: boolean;
  /** List excluded paths alongside the scan (worth it when a change is likely: a large tree lists in half the time). */
  prefetchExcluded?: boolean;
  /** The caller knows nothing changed since the latest checkpoint: no scan, only the marks are set. */
  unchanged?: boolean;
}

export interface RecordResult {
  /** The checkpoint written; null when the tree had not changed. */
  created: CheckpointInfo | null;
  /** The latest checkpoint now (the one written, or the one that already matched the tree). */
  head: CheckpointInfo | null;
  /** With marks: settles once they are written (the store's next operation comes after). */
  marked?: Promise<void>;
}

export interface RestoreOptions {
  /** List what would change, change nothing. */
  dryRun?: boolean;
  /** Write the safety checkpoint even when the latest checkpoint already matches the workspace. */
  forceSafety?: boolean;
  /** Extra meta of the safety checkpoint ("before restore") and of the one recording the restored tree. */
  safetyMeta?: Record<string, string>;
  restoredMeta?: Record<string, string>;
  /**
   * Runs once the files are written, before the store records their stat data (the container backend gives them
   * to the agent's user: a change of owner the store must not take for a change of the files).
   */
  written?: () => Promise<void>;
}

/** A diff between two checkpoints (or a checkpoint and the workspace), with the checkpoints it is between. */
export interface DiffResult {
  from: string | null;
  to: string;
  diff: CheckpointDiff;
}

/** What a restore did (or, dry run, would do). */
export interface RestoreOutcome {
  target: CheckpointInfo;
  dryRun: boolean;
  conversation: "keep" | "revert";
  changes: RestoreChange[];
  safety: CheckpointInfo | null;
  undo: string | null;
  restored: CheckpointInfo | null;
  /** With `conversation: revert`: engine turns the conversation keeps, and how many it drops. */
  conversationTurns: { kept: number; dropped: number } | null;
}

/** A session forked from a checkpoint. */
export interface ForkOutcome {
  session: SessionRecord;
  checkpoint: CheckpointInfo;
  from: { session_id: string; checkpoint_id: string; turn_id: string | null };
  /** Engine turns the new session's conversation starts with (0: a new conversation). */
  conversationTurns: number;
}

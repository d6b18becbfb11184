/**
 * The checkpoints of a store as git holds them, read and written: each one a parentless commit (made with
 * commit-tree from the tree the index holds) referenced by `refs/checkpoints/<id>`, `refs/checkpoint-head` naming
 * the latest. What a checkpoint says of itself (label, parent, stats, what was left out, the workspace
 * repository's HEAD) travels as JSON in the commit message. The latest checkpoint is cached (one object owns a
 * store); a head moved by another object is noticed when a commit cannot move it (StaleHeadError).
 */

import { notFound } from "../../kernel/errors.js";
import type {
  CheckpointInfo,
  CheckpointOptions,
  SkippedFile,
  WorkspaceGitState,
} from "../../model/checkpoints.js";
import { type Git, GitError } from "./git.js";
import { literalPathspecs } from "./scan.js";
import { readWorkspaceGit } from "./workspace-git.js";

const HEAD_REF = "refs/checkpoint-head";
export const REF_PREFIX = "refs/checkpoints/";
export const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
const ZERO_ID = "0".repeat(40);
/** A checkpoint id (a commit's object name). */
export const ID = /^[0-9a-f]{40}$/;
const MAX_SKIPPED = 1000;
const FORMAT = "%(objectname)%00%(tree)%00%(contents:body)%00";

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

/** A checkpoint as read from its ref: its commit, its tree and what its message holds. */
export interface Entry {
  id: string;
  tree: string;
  stored: Stored;
}

/** The head ref moved under a checkpoint (another ShadowRepo on the same store). */
export class StaleHeadError extends Error {}

export const toInfo = ({ id, stored: s }: Entry): CheckpointInfo => ({
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

/** Paths .gitignore and the exclude list leave out (whole directories as "dir/"); `only`: among these paths. */
export function excludedPaths(git: Git, only?: readonly string[]): Promise<string[]> {
  return git.lines([
    "ls-files",
    "-z",
    "--others",
    "--ignored",
    "--exclude-standard",
    "--directory",
    ...literalPathspecs(only),
  ]);
}

/** The checkpoint refs and commits of one store (callers serialise the calls). */
export class CheckpointCommits {
  private cachedHead: Entry | null | undefined;

  constructor(
    private readonly git: Git,
    private readonly opts: Pick<CheckpointOptions, "now">,
  ) {}

  /** The latest checkpoint, cached (this object owns the store); `fresh` reads the ref again. */
  async head(fresh = false): Promise<Entry | null> {
    if (fresh || this.cachedHead === undefined) this.cachedHead = (await this.readRefs(HEAD_REF))[0] ?? null;
    return this.cachedHead;
  }

  /** Forgets the cached latest checkpoint (the store is gone). */
  forgetHead(): void {
    this.cachedHead = undefined;
  }

  /** Every checkpoint, oldest first. */
  async entries(): Promise<Entry[]> {
    return (await this.readRefs(REF_PREFIX.slice(0, -1))).sort((a, b) => a.stored.seq - b.stored.seq);
  }

  async entry(id: string): Promise<Entry | undefined> {
    if (!ID.test(id)) return undefined;
    return (await this.readRefs(REF_PREFIX + id))[0];
  }

  /** The checkpoint `id`; not_found when there is none. */
  async require(id: string): Promise<Entry> {
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

  /**
   * Records `tree` as the checkpoint after `head` (the latest), with its stats against head's tree, what the scan
   * left out (`scanned`) and the excluded paths (`excludedListing` when already under way), and makes it the
   * latest. StaleHeadError when the head ref no longer names `head`.
   */
  async commit(
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
      excludedListing ?? excludedPaths(this.git),
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
}

/**
 * The service's private record of a repository in a workspace (workspace.ts made it): the workspace's files read
 * as data into the record's own index, committed onto the record's branches, diffed against the base commit, sent
 * as a `format-patch` series, pushed to the remote with the credential (remote.ts). The workspace's `.git` is never
 * read. Calls on one record are serialised by the caller.
 */
import { copyFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { FORCED_CONFIG, runGit } from "../git-store/git.js";
import { gitFailure, type Remote, scrubbed, withRemote } from "./remote.js";
import { RECORD_CONFIG } from "./workspace.js";

export interface Author {
  name: string;
  email: string;
}

/** What a push said: pushed, or rejected / failed with the remote's reason (no credential in it). */
export type PushResult = { ok: true } | { ok: false; reason: string };

export interface DiffStat {
  files: number;
  insertions: number;
  deletions: number;
}

const MAX_DIFF_BYTES = 64 * 1024 * 1024;

export class RepositoryRecord {
  constructor(
    /** The record's git directory. */
    readonly dir: string,
    /** The repository's files in the workspace (its work tree). */
    readonly workTree: string,
    private readonly git = "git",
  ) {}

  /** The commit a branch of the record points at (null: no such branch), or the base with `null`. */
  async tip(branch: string | null): Promise<string | null> {
    const ref = branch === null ? "refs/base" : `refs/heads/${branch}`;
    const out = await this.text(["rev-parse", "--verify", "--quiet", ref], {}, [1]);
    return out || null;
  }

  /**
   * The tree of the workspace's files now (`.gitignore` and the record's excludes honoured; nested `.git`
   * directories are never entered). `keepIndex: false` works on a copy of the index (a diff that commits nothing).
   */
  async snapshot(keepIndex: boolean): Promise<string> {
    const index = join(this.dir, "index");
    if (keepIndex) {
      await this.text(["add", "--all", "--", "."]);
      return this.text(["write-tree"]);
    }
    const copy = join(this.dir, `index.snapshot-${process.pid}-${Date.now()}`);
    await copyFile(index, copy);
    try {
      const env = { GIT_INDEX_FILE: copy };
      await this.text(["add", "--all", "--", "."], env);
      return await this.text(["write-tree"], env);
    } finally {
      await rm(copy, { force: true });
    }
  }

  async treeOf(commit: string): Promise<string> {
    return this.text(["rev-parse", "--verify", `${commit}^{tree}`]);
  }

  /** A commit of `tree` on `parent` (not on any ref yet). */
  async commit(tree: string, parent: string, message: string, author: Author): Promise<string> {
    const env = {
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_COMMITTER_NAME: author.name,
      GIT_COMMITTER_EMAIL: author.email,
    };
    const r = await runGit(this.git, [...this.prefix(), "commit-tree", tree, "-p", parent, "-F", "-"], {
      cwd: this.dir,
      input: message,
      env,
    });
    return r.stdout.toString("utf8").trim();
  }

  async setBranch(branch: string, commit: string): Promise<void> {
    await this.text(["update-ref", `refs/heads/${branch}`, commit]);
  }

  /** The unified diff (binary files as `--binary` patches) from `from` to a tree or commit. */
  async diff(from: string, to: string): Promise<string> {
    return this.raw(["diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", from, to, "--"]);
  }

  async diffStat(from: string, to: string): Promise<DiffStat> {
    const out = await this.text(["diff", "--numstat", "--no-renames", from, to, "--"]);
    const stat: DiffStat = { files: 0, insertions: 0, deletions: 0 };
    for (const line of out.split("\n").filter(Boolean)) {
      const [a, d] = line.split("\t");
      stat.files += 1;
      stat.insertions += Number(a) || 0;
      stat.deletions += Number(d) || 0;
    }
    return stat;
  }

  /** The commits `base..tip` as a `git format-patch` series (an mbox). */
  async formatPatch(base: string, tip: string): Promise<string> {
    return this.raw([
      "format-patch",
      "--stdout",
      "--binary",
      "--no-color",
      "--no-signature",
      `${base}..${tip}`,
    ]);
  }

  /** Pushes `commit` to `refs/heads/<branch>` of the remote (fast-forward only). */
  async push(
    remote: Remote,
    commit: string,
    branch: string,
    scratch: string,
    timeoutMs: number,
  ): Promise<PushResult> {
    try {
      const out = await withRemote(scratch, remote, (env) =>
        runGit(
          this.git,
          [
            ...this.prefix(),
            "push",
            "--porcelain",
            "--no-verify",
            "--",
            remote.url,
            `${commit}:refs/heads/${branch}`,
          ],
          { cwd: this.dir, env, timeoutMs, okCodes: [1] },
        ),
      );
      const text = out.stdout.toString("utf8");
      const line = text
        .split("\n")
        .find((l) => l.endsWith(`refs/heads/${branch}`) || l.includes(`:refs/heads/${branch}\t`));
      if (out.exitCode === 0 && line && !line.startsWith("!")) return { ok: true };
      const reason = /\t\[([^\]]+)\](?: \(([^)]*)\))?/.exec(line ?? "");
      return {
        ok: false,
        reason: reason
          ? [reason[1], reason[2]].filter(Boolean).join(": ")
          : scrubbed(text.trim() || "push failed", remote),
      };
    } catch (err) {
      return { ok: false, reason: gitFailure(err, remote) };
    }
  }

  private prefix(): string[] {
    return [
      `--git-dir=${this.dir}`,
      `--work-tree=${this.workTree}`,
      "--no-replace-objects",
      ...FORCED_CONFIG,
      ...RECORD_CONFIG,
    ];
  }

  private async text(
    args: string[],
    env: Record<string, string> = {},
    okCodes: number[] = [],
  ): Promise<string> {
    const r = await runGit(this.git, [...this.prefix(), ...args], { cwd: this.workTree, env, okCodes });
    return r.stdout.toString("utf8").trim();
  }

  /** Output as git wrote it (a patch keeps its last newline); more than MAX_DIFF_BYTES is an error. */
  private async raw(args: string[]): Promise<string> {
    const r = await runGit(this.git, [...this.prefix(), ...args], {
      cwd: this.workTree,
      maxOutput: MAX_DIFF_BYTES,
    });
    if (r.truncated) throw new Error(`the patch is larger than ${MAX_DIFF_BYTES} bytes`);
    return r.stdout.toString("utf8");
  }
}

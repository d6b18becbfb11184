/**
 * A repository in a workspace, made from its mirror, and the service's private record of it.
 *
 * The workspace gets an ordinary clone: `.git` with a copy of the mirror's objects (`clone --no-hardlinks`: a
 * hard link would let the agent's writes reach the mirror other sessions read), `origin` set to the remote's URL
 * (no credential in it), the ref checked out (a branch that tracks `origin/<branch>`, or a detached tag or commit).
 * It is made before the agent has run anything, so the service's git reads nothing the agent wrote.
 *
 * After that the service never runs git in the workspace's `.git`: the agent can write it (hooks, `core.fsmonitor`,
 * filter drivers, a remote URL of its choosing — each a way to run code or send a credential elsewhere). Commits,
 * diffs and pushes go through the private record instead (`<records>/<environment>/<n>.git`, outside every
 * sandbox): a bare repository that borrows the mirror's objects (alternates; the base commit is pinned in the
 * mirror), with its own index of the workspace's files and the forced configuration of git-store/git.ts. It reads
 * the workspace's files as data, never its `.git`.
 */
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { FORCED_CONFIG, runGit } from "../git-store/git.js";

export interface CheckoutRequest {
  /** The mirror's git directory. */
  mirror: string;
  commit: string;
  /** The branch to create and track, or null (detached at `commit`). */
  branch: string | null;
  /** The URL `origin` gets in the workspace (as the client wrote it). */
  originUrl: string;
  /** Where the repository's files go (absolute; created if missing; must hold no `.git`). */
  target: string;
  /** The private record to create. */
  record: string;
  /** Workspace-relative paths (gitignore syntax) the record leaves out: the environment's own directories. */
  exclude: readonly string[];
  git?: string;
}

/** Forced on every call in a record, besides git-store's: file stat data that a hand-over to the agent changes. */
export const RECORD_CONFIG = ["-c", "core.trustctime=false", "-c", "core.checkStat=minimal"];

/** Clones into the workspace and creates the private record; throws GitError (or a plain Error) on failure. */
export async function checkOut(req: CheckoutRequest): Promise<void> {
  const git = req.git ?? "git";
  await mkdir(req.target, { recursive: true, mode: 0o755 });
  if (await stat(join(req.target, ".git")).catch(() => null)) {
    throw new Error(`${req.target} already holds a .git`);
  }
  // Cloned beside the files (the target may hold some already), then moved in.
  const tmp = join(req.target, `.clone-${randomBytes(6).toString("hex")}`);
  try {
    await runGit(
      git,
      [
        ...FORCED_CONFIG,
        "clone",
        "--quiet",
        "--no-checkout",
        "--no-hardlinks",
        "--origin",
        "origin",
        "--",
        req.mirror,
        tmp,
      ],
      { cwd: req.target },
    );
    await rename(join(tmp, ".git"), join(req.target, ".git"));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  const ws = [`--git-dir=${join(req.target, ".git")}`, `--work-tree=${req.target}`, ...FORCED_CONFIG];
  const run = (args: string[]) => runGit(git, [...ws, ...args], { cwd: req.target });
  await run(["config", "remote.origin.url", req.originUrl]);
  // Files written by several workers at once: on a disk where each write waits (a VM's block device), the checkout
  // of a large tree takes a fraction of the time (50 000 files: 1.25 s instead of 1.7 s with 8 workers).
  const workers = ["-c", `checkout.workers=${Math.min(8, availableParallelism() * 4)}`];
  if (req.branch) {
    await run([...workers, "checkout", "--quiet", "-B", req.branch, req.commit]);
    await run(["config", `branch.${req.branch}.remote`, "origin"]);
    await run(["config", `branch.${req.branch}.merge`, `refs/heads/${req.branch}`]);
  } else {
    await run([...workers, "checkout", "--quiet", "--detach", req.commit]);
  }
  await createRecord(git, req);
}

async function createRecord(git: string, req: CheckoutRequest): Promise<void> {
  await rm(req.record, { recursive: true, force: true });
  await mkdir(req.record, { recursive: true, mode: 0o700 });
  await runGit(git, [...FORCED_CONFIG, "init", "--quiet", "--bare", req.record], { cwd: req.record });
  await writeFile(join(req.record, "objects", "info", "alternates"), `${join(req.mirror, "objects")}\n`);
  await writeFile(join(req.record, "info", "exclude"), `${req.exclude.join("\n")}\n`);
  await runGit(git, [`--git-dir=${req.record}`, ...FORCED_CONFIG, "update-ref", "refs/base", req.commit], {
    cwd: req.record,
  });
  // The workspace's index describes the same files at the same commit: the record starts from a copy of it.
  await copyFile(join(req.target, ".git", "index"), join(req.record, "index"));
}

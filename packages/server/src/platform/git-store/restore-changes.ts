/**
 * What a restore changes in the workspace (the paths git writes and deletes going from one tree to another), and
 * whether it may: a restore never makes git remove something no checkpoint holds.
 */
import type { Dirent } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { conflict } from "../../kernel/errors.js";
import type { RestoreChange } from "../../model/checkpoints.js";
import type { Git } from "./git.js";

/** The paths written and deleted going from tree `from` to tree `to`. */
export async function treeChanges(git: Git, from: string, to: string): Promise<RestoreChange[]> {
  const fields = await git.lines(["diff-tree", "-z", "-r", "--name-status", "--no-renames", from, to]);
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
export async function checkRestorable(root: string, changes: RestoreChange[]): Promise<void> {
  const deleted = new Set(changes.filter((c) => c.action === "delete").map((c) => c.path));
  const seen = new Set<string>();
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

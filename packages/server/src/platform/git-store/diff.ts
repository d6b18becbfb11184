/**
 * What changed between two trees of a store, as a checkpoint diff: every file with its status (renames found),
 * line counts and whether it is binary, and optionally the patch (capped: `truncated` past the cap). External
 * diff drivers and text conversions are never run.
 */
import type { CheckpointDiff, FileChange, FileStatus } from "../../model/checkpoints.js";
import { type Git, splitNul } from "./git.js";

const DEFAULT_MAX_PATCH_BYTES = 1024 * 1024;

/** The changes from tree `base` to tree `tree`. */
export async function diffTrees(
  git: Git,
  base: string,
  tree: string,
  opts: { patch?: boolean; maxPatchBytes?: number },
): Promise<CheckpointDiff> {
  const common = ["-r", "-M", "--no-ext-diff", "--no-textconv", base, tree];
  const raw = await git.run(["diff-tree", "-z", "--raw", "--numstat", ...common]);
  const result: CheckpointDiff = { files: parseRawNumstat(splitNul(raw.stdout)) };
  if (opts.patch) {
    const maxOutput = opts.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES;
    const patch = await git.run(["diff-tree", "-p", "--no-color", ...common], { maxOutput });
    result.patch = patch.stdout.toString("utf8");
    result.truncated = patch.truncated;
  }
  return result;
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

import { lstat, readFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import type { WorkspaceGitState } from "../../model/checkpoints.js";

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

async function readText(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch {
    return null;
  }
}

/**
 * HEAD and branch of the repository the workspace itself is (`<workspace>/.git`, a directory or a `gitdir:`
 * file), read from its files: git is never run against the user's repository (its config could name hooks or
 * an fsmonitor), and nothing in it is written. Null when the workspace is not a repository.
 */
export async function readWorkspaceGit(workspace: string): Promise<WorkspaceGitState | null> {
  const dotGit = join(workspace, ".git");
  let gitDir = dotGit;
  try {
    const st = await lstat(dotGit);
    if (st.isFile()) {
      const m = /^gitdir:\s*(.+?)\s*$/m.exec((await readText(dotGit)) ?? "");
      if (!m?.[1]) return { head: null, branch: null };
      gitDir = isAbsolute(m[1]) ? m[1] : resolve(workspace, m[1]);
    } else if (!st.isDirectory()) {
      return null;
    }
  } catch {
    return null;
  }
  const head = (await readText(join(gitDir, "HEAD")))?.trim();
  if (!head) return { head: null, branch: null };
  const symbolic = /^ref:\s*(\S+)$/.exec(head);
  if (!symbolic?.[1]) return { head: SHA.test(head) ? head : null, branch: null };
  const ref = symbolic[1];
  if (!ref.startsWith("refs/") || ref.split("/").includes("..")) return { head: null, branch: null };
  const branch = ref.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : ref;
  const common = (await readText(join(gitDir, "commondir")))?.trim();
  const commonDir = common ? resolve(gitDir, common) : gitDir;
  for (const dir of new Set([gitDir, commonDir])) {
    const loose = (await readText(join(dir, ref)))?.trim();
    if (loose && SHA.test(loose)) return { head: loose, branch };
  }
  const packed = (await readText(join(commonDir, "packed-refs"))) ?? "";
  for (const line of packed.split("\n")) {
    const [sha, name] = line.trim().split(" ");
    if (name === ref && sha && SHA.test(sha)) return { head: sha, branch };
  }
  return { head: null, branch };
}

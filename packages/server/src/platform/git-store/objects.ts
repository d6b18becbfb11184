/**
 * A checkpoint's commit object, written as a loose object by this process rather than by `git commit-tree` (one git
 * process fewer per checkpoint), in the form commit-tree writes a parentless commit of the store's identity: the
 * zlib-deflated `commit <size>\0` + body, named by the SHA-1 of that, under objects/xx/, through a temporary file
 * renamed into place, read-only like git's. The caller holds the store's lock.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { deflate } from "node:zlib";

const deflated = promisify(deflate);
/** Author and committer of every checkpoint (what FORCED_CONFIG gives commit-tree). */
const IDENT = "codex-agent-api <checkpoints@localhost>";

/** The body of a parentless commit of `tree` with `message`, dated `seconds` (Unix time, UTC). */
export function commitBody(tree: string, message: string, seconds: number): string {
  const ident = `${IDENT} ${seconds} +0000`;
  return `tree ${tree}\nauthor ${ident}\ncommitter ${ident}\n\n${message}`;
}

/** Writes the commit (see `commitBody`) into the store at `gitDir`; its id. */
export async function writeCommit(gitDir: string, tree: string, message: string): Promise<string> {
  const body = Buffer.from(commitBody(tree, message, Math.floor(Date.now() / 1000)), "utf8");
  const raw = Buffer.concat([Buffer.from(`commit ${body.length}\0`, "ascii"), body]);
  const id = createHash("sha1").update(raw).digest("hex");
  const dir = join(gitDir, "objects", id.slice(0, 2));
  const path = join(dir, id.slice(2));
  if (await stat(path).catch(() => null)) return id; // the same commit in the same second: already there
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `tmp_obj_${randomBytes(6).toString("hex")}`);
  try {
    await writeFile(tmp, await deflated(raw), { mode: 0o444 });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return id;
}

/**
 * Where uploaded files' contents live: `<dir>/<project>/<file id>`, written once and never changed. An upload is
 * streamed into a temporary file under `<dir>/.incoming/` (never held in memory), hashed as it arrives, and renamed
 * into place only when it is complete and accepted: an interrupted or refused upload leaves nothing behind (its
 * temporary file is removed at once; one a crash left is swept later). Contents are only readable by the service
 * (directories 0700, files 0600); the directory must not be inside the workspace root (config.ts checks it), so no
 * agent can read another project's files.
 */
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { type FileHandle, mkdir, open, readdir, rename, rm, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { copyUpload } from "../../platform/workspace/upload.js";

/** What was received: the temporary file, its size and SHA-256 (hex). */
export interface Received {
  tmp: string;
  bytes: number;
  sha256: string;
}

/** Project ids are API-key project names (1-64 of letters, digits, `_`, `.`, `-`, not starting with a dot). */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const INCOMING = ".incoming";

/** A temporary file untouched this long belongs to no upload in progress (an upload keeps writing to its file). */
export const STALE_INCOMING_MS = 3600_000;

const ignoreMissing = (err: unknown) => {
  if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
};

/** A file's contents are not there (it was deleted, or the files directory is not shared by every instance). */
export class ContentMissingError extends Error {}

/**
 * Copies a file's contents to `rel` inside a workspace `root` (confined and atomic, see platform/workspace/upload.ts);
 * returns the size written. The copy is a snapshot: deleting the file later leaves it as it is.
 */
export async function copyContents(content: string, root: string, rel: string): Promise<number> {
  let handle: FileHandle;
  try {
    handle = await open(content, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new ContentMissingError(content);
    throw err;
  }
  try {
    return (await copyUpload(root, rel, handle)).bytes;
  } finally {
    await handle.close();
  }
}

export class FileStorage {
  constructor(readonly dir: string) {}

  /** The directory of a project's contents (its name, or a hash of it if it could not be a directory name). */
  private projectDir(projectId: string): string {
    const name = SAFE_NAME.test(projectId)
      ? projectId
      : `~${createHash("sha256").update(projectId).digest("hex").slice(0, 32)}`;
    return join(this.dir, name);
  }

  /** Where a file's contents are. */
  contentPath(projectId: string, fileId: string): string {
    if (!/^file-[A-Za-z0-9]+$/.test(fileId)) throw new Error(`not a file id: ${fileId}`);
    return join(this.projectDir(projectId), fileId);
  }

  /**
   * Streams `source` into a new temporary file (flushed to disk before this returns), counting and hashing it. On
   * any failure (the client went away, the disk is full) the temporary file is removed and the error rethrown.
   */
  async receive(source: NodeJS.ReadableStream): Promise<Received> {
    const incoming = join(this.dir, INCOMING);
    await mkdir(incoming, { recursive: true, mode: 0o700 });
    const tmp = join(incoming, `${randomBytes(12).toString("hex")}.part`);
    const hash = createHash("sha256");
    let bytes = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, count, createWriteStream(tmp, { flags: "wx", mode: 0o600, flush: true }));
    } catch (err) {
      await this.discard(tmp);
      throw err;
    }
    return { tmp, bytes, sha256: hash.digest("hex") };
  }

  /** Moves a received file into place as the contents of `fileId`. */
  async commit(tmp: string, projectId: string, fileId: string): Promise<void> {
    const target = this.contentPath(projectId, fileId);
    await mkdir(this.projectDir(projectId), { recursive: true, mode: 0o700 });
    await rename(tmp, target);
  }

  /** Removes a temporary file (if it is still there). */
  async discard(tmp: string): Promise<void> {
    await unlink(tmp).catch(ignoreMissing);
  }

  /** Removes a file's contents (if they are there). */
  async remove(projectId: string, fileId: string): Promise<void> {
    await rm(this.contentPath(projectId, fileId), { force: true });
  }

  /** Removes temporary files no upload has written to for `staleMs` (left by a crash); returns how many. */
  async sweepIncoming(now: number, staleMs = STALE_INCOMING_MS): Promise<number> {
    const incoming = join(this.dir, INCOMING);
    let names: string[];
    try {
      names = await readdir(incoming);
    } catch (err) {
      ignoreMissing(err);
      return 0;
    }
    let n = 0;
    for (const name of names) {
      const path = join(incoming, name);
      try {
        const st = await stat(path);
        if (now - st.mtimeMs < staleMs) continue;
        await unlink(path);
        n++;
      } catch (err) {
        ignoreMissing(err);
      }
    }
    return n;
  }
}

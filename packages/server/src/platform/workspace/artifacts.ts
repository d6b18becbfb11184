/**
 * Workspace files exposed as artifacts (template §1.2 / §1.3 rows 14-15 / §1.5), with symlink-safe resolution.
 */
import type { Dirent, Stats } from "node:fs";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  unlinkSync,
} from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import mime from "mime-types";
import { forbidden, notFound, payloadTooLarge } from "../../kernel/errors.js";
import {
  ACCESS_DENIED,
  decodeArtifactId,
  encodeArtifactId,
  isPermissionError,
  permissionDenied,
  type ResolvedPath,
  realpathLoose,
  realRootOf,
  resolveDetailed,
} from "./paths.js";

export const DEFAULT_MAX_ARTIFACT_BYTES = 50 * 1024 * 1024;
export const DEFAULT_MAX_LIST_ENTRIES = 10_000;
/** Directory names never descended into by {@link listArtifacts} (at any depth). */
export const SKIPPED_DIRS: ReadonlySet<string> = new Set([".git", "node_modules", ".codex"]);

export interface ArtifactInfo {
  id: string;
  /** Workspace-relative path (posix separators). */
  path: string;
  /** Real absolute location of the file (symlinks resolved; inside the real workspace root). */
  absPath: string;
  size: number;
  /** Unix seconds: birthtime when the filesystem reports one, else mtime. */
  createdAt: number;
  modifiedAt: number;
}

export interface ListArtifactsOptions {
  limit?: number;
  /** Artifact id cursor (exclusive): only paths sorting after its decoded path are returned. */
  after?: string;
  /** Upper bound on the page size (also applies when `limit` is absent); default 10000. */
  maxEntries?: number;
}

export interface ListArtifactsResult {
  data: ArtifactInfo[];
  has_more: boolean;
}

function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

const MISSING = new Set(["ENOENT", "ENOTDIR", "ENAMETOOLONG"]);

function toInfo(id: string, rel: string, absPath: string, st: Stats): ArtifactInfo {
  const born = st.birthtimeMs > 0 ? st.birthtimeMs : st.mtimeMs;
  return {
    id,
    path: rel,
    absPath,
    size: st.size,
    createdAt: Math.floor(born / 1000),
    modifiedAt: Math.floor(st.mtimeMs / 1000),
  };
}

const label = (r: ResolvedPath) => (r.rel === "" ? "." : r.rel);

/** Resolves `id` and stats the real target; 404 unless it is a regular file. */
function statResolved(root: string, id: string): { r: ResolvedPath; info: ArtifactInfo } {
  const r = resolveDetailed(root, decodeArtifactId(id));
  let st: Stats;
  try {
    st = lstatSync(r.real);
  } catch (err) {
    if (MISSING.has(errCode(err) ?? "")) throw notFound(`Artifact not found: ${label(r)}`);
    if (isPermissionError(err)) throw permissionDenied(r.rel);
    throw err;
  }
  if (!st.isFile()) throw notFound(`Artifact not found: ${label(r)}`);
  return { r, info: toInfo(id, r.rel, r.real, st) };
}

/**
 * Metadata of the regular file addressed by `id`. `info.id` echoes the id as supplied (template behaviour).
 * 403 on escapes, 404 `Artifact not found: <rel>` when missing or not a regular file (the root → "." ).
 */
export function statArtifact(root: string, id: string): ArtifactInfo {
  return statResolved(root, id).info;
}

/** Reads the artifact's bytes; 413 when it is larger than `maxBytes` (default 50 MiB). */
export function readArtifact(
  root: string,
  id: string,
  maxBytes: number = DEFAULT_MAX_ARTIFACT_BYTES,
): { info: ArtifactInfo; content: Buffer } {
  const r = resolveDetailed(root, decodeArtifactId(id));
  const missing = () => notFound(`Artifact not found: ${label(r)}`);
  let fd: number;
  try {
    // O_NOFOLLOW: the checked real path must not have become a symlink since; O_NONBLOCK: never hang on a FIFO.
    fd = openSync(r.real, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    const code = errCode(err);
    if (code === "ELOOP") throw forbidden(ACCESS_DENIED);
    if (MISSING.has(code ?? "")) throw missing();
    if (isPermissionError(err)) throw permissionDenied(r.rel);
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw missing();
    if (st.size > maxBytes) {
      throw payloadTooLarge(`Artifact too large: ${st.size} bytes exceeds limit ${maxBytes}`);
    }
    const buf = Buffer.allocUnsafe(st.size);
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    const content = n === buf.length ? buf : buf.subarray(0, n);
    const info = toInfo(id, r.rel, r.real, st);
    info.size = content.length;
    return { info, content };
  } finally {
    closeSync(fd);
  }
}

/**
 * Deletes the regular file addressed by `id` and returns its metadata. When the path itself is a symlink (to a
 * file inside the workspace), the link is removed, not its target.
 */
export function deleteArtifact(root: string, id: string): ArtifactInfo {
  const { r, info } = statResolved(root, id);
  // The entry itself, located without following its last component: the real parent + the base name.
  const parent = realpathLoose(dirname(r.abs));
  if (parent === null) throw forbidden(ACCESS_DENIED);
  const entry = join(parent, basename(r.abs));
  try {
    unlinkSync(entry);
  } catch (err) {
    if (MISSING.has(errCode(err) ?? "")) throw notFound(`Artifact not found: ${label(r)}`);
    if (isPermissionError(err)) throw permissionDenied(r.rel);
    throw err;
  }
  return info;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Regular files below the root, recursively, sorted by relative path (UTF-16 code-unit order, the same as
 * comparing the returned `path` strings). Symlinks are neither listed nor followed; `.git`, `node_modules` and
 * `.codex` directories are skipped. The walk visits directories in output order, so subtrees wholly before the
 * cursor are not read and the walk stops as soon as the page (+1 to compute `has_more`) is full.
 */
export function listArtifacts(root: string, opts: ListArtifactsOptions = {}): ListArtifactsResult {
  const maxEntries = opts.maxEntries ?? DEFAULT_MAX_LIST_ENTRIES;
  const cap = Math.max(0, Math.floor(Math.min(opts.limit ?? Number.POSITIVE_INFINITY, maxEntries)));
  const after = opts.after ? decodeArtifactId(opts.after) : undefined;
  const realRoot = realRootOf(root);
  const data: ArtifactInfo[] = [];
  let hasMore = false;

  /** Returns true when the walk must stop (page full). */
  const walk = (dirAbs: string, dirRel: string): boolean => {
    let dirents: Dirent[];
    try {
      dirents = readdirSync(dirAbs, { withFileTypes: true });
    } catch (err) {
      const code = errCode(err);
      if (MISSING.has(code ?? "") || code === "EACCES" || code === "EPERM") return false;
      throw err;
    }
    const items: { key: string; rel: string; name: string; dir: boolean }[] = [];
    for (const d of dirents) {
      if (d.isSymbolicLink()) continue;
      const rel = dirRel === "" ? d.name : `${dirRel}/${d.name}`;
      if (d.isDirectory()) {
        if (!SKIPPED_DIRS.has(d.name)) items.push({ key: `${rel}/`, rel, name: d.name, dir: true });
      } else if (d.isFile()) {
        items.push({ key: rel, rel, name: d.name, dir: false });
      }
    }
    // Sorting a directory's entries by "name/" (dirs) or "name" (files) makes the depth-first walk emit full
    // relative paths in plain string order.
    items.sort((a, b) => compare(a.key, b.key));
    for (const item of items) {
      const abs = join(dirAbs, item.name);
      if (item.dir) {
        // Every path below this directory starts with item.key; skip it when all of them sort before `after`.
        if (after !== undefined && !after.startsWith(item.key) && after > item.key) continue;
        if (walk(abs, item.rel)) return true;
        continue;
      }
      if (after !== undefined && item.rel <= after) continue;
      let st: Stats;
      try {
        st = lstatSync(abs);
      } catch {
        continue;
      }
      if (!st.isFile()) continue;
      if (data.length >= cap) {
        hasMore = true;
        return true;
      }
      data.push(toInfo(encodeArtifactId(item.rel), item.rel, abs, st));
    }
    return false;
  };

  walk(realRoot, "");
  return { data, has_more: hasMore };
}

/** Source code is text (mime-types knows `.ts` as a video format and `.py` not at all). */
const SOURCE_CODE = new Set([
  "ts",
  "tsx",
  "mts",
  "cts",
  "py",
  "rs",
  "go",
  "rb",
  "java",
  "kt",
  "swift",
  "c",
  "h",
  "cpp",
  "hpp",
  "cs",
  "php",
  "sh",
  "bash",
  "zsh",
  "sql",
  "toml",
  "ini",
  "cfg",
  "env",
  "lock",
  "log",
  "tf",
  "vue",
  "svelte",
  "gradle",
]);

/** The Content-Type of a workspace file (text types get a UTF-8 charset). */
export function contentTypeFor(path: string): string {
  const ext = extname(path).slice(1).toLowerCase();
  if (SOURCE_CODE.has(ext)) return "text/plain; charset=utf-8";
  const type = ext ? mime.lookup(ext) : false;
  return type ? mime.contentType(type) || type : "application/octet-stream";
}

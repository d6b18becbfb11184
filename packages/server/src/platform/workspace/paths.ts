/**
 * Artifact ids and workspace path confinement.
 *
 * Unlike the template (which used `normpath` only), every resolution here follows symlinks: a path is accepted
 * only when its real location — the realpath of the path itself or, when it does not exist yet, of its nearest
 * existing ancestor (dangling symlinks are followed by hand) — lies inside the realpath of the workspace root.
 */
import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { badRequest, forbidden } from "../../kernel/errors.js";

export const ACCESS_DENIED = "Access denied: path outside workspace";

/** Symlink hops followed by hand (dangling links) before giving up; matches Linux's MAXSYMLINKS. */
const MAX_LINK_HOPS = 40;
const BASE64URL_ID = /^[A-Za-z0-9_-]*={0,2}$/;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Unpadded base64url encoding of the UTF-8 bytes of a workspace-relative path. */
export function encodeArtifactId(relPath: string): string {
  return Buffer.from(relPath, "utf8").toString("base64url");
}

/**
 * Inverse of {@link encodeArtifactId}. Padded ids are accepted too. When the id is not decodable (characters
 * outside the base64url alphabet, an impossible length, misplaced padding, or bytes that are not valid UTF-8)
 * the id itself is returned and treated as a plain relative path, as the template does.
 */
export function decodeArtifactId(id: string): string {
  if (id === "" || !BASE64URL_ID.test(id)) return id;
  const unpadded = id.replace(/=+$/, "");
  if (unpadded.length % 4 === 1) return id;
  if (unpadded.length !== id.length && id.length % 4 !== 0) return id;
  try {
    return utf8.decode(Buffer.from(unpadded, "base64url"));
  } catch {
    return id;
  }
}

function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** Error codes meaning "this path does not exist (and cannot be followed further)". */
const MISSING = new Set(["ENOENT", "ENOTDIR", "ENAMETOOLONG"]);

/** The server's own permissions forbid the operation (a client-visible 403, not a server fault). */
const NOT_PERMITTED = new Set(["EACCES", "EPERM", "EROFS"]);

export function isPermissionError(err: unknown): boolean {
  return NOT_PERMITTED.has(errCode(err) ?? "");
}

export const permissionDenied = (rel: string) => forbidden(`Permission denied: ${rel === "" ? "." : rel}`);

/** A client-supplied path for an error message (long ones shortened). */
export const shown = (path: string) => (path.length > 200 ? `${path.slice(0, 200)}…` : path);

/**
 * A filesystem error caused by a path the client chose, as the 4xx it is (a name too long, a file where a
 * directory is needed, no permission, …). Anything else is returned unchanged (the server's own failure).
 */
export function clientPathError(err: unknown, path: string): unknown {
  switch (errCode(err)) {
    case "ENAMETOOLONG":
      return badRequest(`Path name too long: ${shown(path)}`, "path");
    case "ENOTDIR":
    case "EEXIST":
      return badRequest(`Parent path is not a directory: ${shown(path)}`, "path");
    case "EISDIR":
      return badRequest(`Path is a directory: ${shown(path)}`, "path");
    case "ELOOP":
      return forbidden(ACCESS_DENIED);
    case "EINVAL":
      return badRequest(`Invalid path: ${shown(path)}`, "path");
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return forbidden(`Permission denied: ${shown(path)}`);
    default:
      return err;
  }
}

/** `true` when `p` equals `realRoot` or lies below it (both absolute, normalised). */
export function isInside(realRoot: string, p: string): boolean {
  const rel = relative(realRoot, p);
  return rel === "" || (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`));
}

/**
 * Where `p` (absolute) really lives: `realpath(p)` when it exists; otherwise the realpath of its nearest existing
 * ancestor joined with the remaining components. Dangling symlinks are followed manually so a not-yet-existing
 * target is still located. Returns `null` on a symlink loop / too many hops. Unexpected fs errors (EACCES, EIO)
 * propagate.
 */
export function realpathLoose(p: string, hops = 0): string | null {
  if (hops > MAX_LINK_HOPS) return null;
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(p, { throwIfNoEntry: false });
  } catch (err) {
    // ELOOP here means an ancestor is a looping symlink: resolving that ancestor will report it.
    const code = errCode(err) ?? "";
    if (!MISSING.has(code) && code !== "ELOOP") throw err;
    st = undefined;
  }
  if (st === undefined) {
    const parent = dirname(p);
    if (parent === p) return p;
    const realParent = realpathLoose(parent, hops);
    return realParent === null ? null : join(realParent, basename(p));
  }
  try {
    return realpathSync(p);
  } catch (err) {
    const code = errCode(err);
    if (!st.isSymbolicLink() || (code !== "ENOENT" && code !== "ELOOP" && code !== "ENOTDIR")) throw err;
  }
  // Dangling or looping symlink: resolve its target relative to the link's real directory and recurse.
  let target: string;
  try {
    target = readlinkSync(p);
  } catch {
    return null;
  }
  const realDir = realpathLoose(dirname(p), hops);
  return realDir === null ? null : realpathLoose(resolve(realDir, target), hops + 1);
}

/** Realpath of the workspace root (a root that does not exist yet is located through its nearest ancestor). */
export function realRootOf(root: string): string {
  const real = realpathLoose(resolve(root));
  if (real === null) throw new Error(`Workspace root cannot be resolved: ${root}`);
  return real;
}

export interface ResolvedPath {
  /** Absolute path inside the real root, normalised lexically (no symlinks followed). */
  abs: string;
  /** Workspace-relative path, posix separators, no leading "./"; "" for the root itself. */
  rel: string;
  /** The real location of `abs` (symlinks followed); always inside `realRoot`. */
  real: string;
  realRoot: string;
}

/** {@link resolveInWorkspace} plus the real (symlink-free) location, used for the actual fs calls. */
export function resolveDetailed(root: string, relPath: string): ResolvedPath {
  if (typeof relPath !== "string" || relPath.includes("\0") || isAbsolute(relPath)) {
    throw forbidden(ACCESS_DENIED);
  }
  const realRoot = realRootOf(root);
  const abs = resolve(realRoot, relPath);
  if (!isInside(realRoot, abs)) throw forbidden(ACCESS_DENIED);
  const rel = relative(realRoot, abs).split(sep).join("/");
  let real: string | null;
  try {
    real = realpathLoose(abs);
  } catch (err) {
    // A directory on the way that the server may not search: where the path leads cannot be checked.
    if (isPermissionError(err)) throw permissionDenied(rel);
    throw err;
  }
  if (real === null || !isInside(realRoot, real)) throw forbidden(ACCESS_DENIED);
  return { abs, rel, real, realRoot };
}

/**
 * Resolves a workspace-relative path to an absolute path inside root (following symlinks for the check).
 * Throws `forbidden("Access denied: path outside workspace")` on any escape: `..` leading out, an absolute
 * relPath, NUL bytes, and symlinks (at any level, dangling ones included) whose real target is outside the root.
 * `abs` is lexical (inside `realpath(root)`); `rel` is normalised (posix separators, no leading "./").
 */
export function resolveInWorkspace(root: string, relPath: string): { abs: string; rel: string } {
  const { abs, rel } = resolveDetailed(root, relPath);
  return { abs, rel };
}

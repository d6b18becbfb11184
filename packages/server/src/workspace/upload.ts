/**
 * `POST /files/upload-stream` (template §3.2): `{path, content_base64}` → write the file inside the workspace.
 * Check order follows the framework: path → content → confinement → base64 → size.
 */
import { randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, realpathSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { badRequest, forbidden, payloadTooLarge } from "../domain/errors.js";
import { clientPathError, isInside, realpathLoose, realRootOf } from "./paths.js";

export const DEFAULT_MAX_UPLOAD_BYTES = 100 * 1024 * 1024;
export const PATH_ESCAPES = "Path escapes base directory";

export interface UploadResult {
  /** Resolved (real) absolute path written. */
  path: string;
  bytes: number;
}

const BASE64_BODY = /^[A-Za-z0-9+/]*$/;

/**
 * Strictly validates standard (RFC 4648 §4, padded) base64 without decoding it; returns the decoded length.
 * `Buffer.from(s, "base64")` silently skips bad characters and accepts missing padding, so it cannot be used.
 */
export function validateBase64(s: string): number {
  if (s.length % 4 !== 0) throw badRequest(`Invalid base64: length ${s.length} is not a multiple of 4`);
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  const body = s.slice(0, s.length - pad);
  if (!BASE64_BODY.test(body)) {
    let i = 0;
    while (i < body.length && /[A-Za-z0-9+/]/.test(body.charAt(i))) i++;
    const ch = body.charAt(i);
    throw badRequest(
      ch === "="
        ? `Invalid base64: misplaced padding at position ${i}`
        : `Invalid base64: invalid character ${JSON.stringify(ch)} at position ${i}`,
    );
  }
  return (s.length / 4) * 3 - pad;
}

/**
 * Writes `body.content_base64` (standard base64) to `body.path` — absolute, or relative to `root` — creating
 * parent directories; the write is atomic (temp file in the target directory + rename). The target's real
 * location (nearest existing ancestor's realpath, symlinks including dangling ones followed) must be inside
 * `realpath(root)`; a symlink at the target path is written through (its target is replaced).
 */
export function writeUpload(
  root: string,
  body: unknown,
  maxBytes: number = DEFAULT_MAX_UPLOAD_BYTES,
): UploadResult {
  const obj =
    typeof body === "object" && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : {};
  const rawPath = obj.path;
  if (typeof rawPath !== "string" || rawPath === "") throw badRequest("Missing 'path'", "path");
  const content = obj.content_base64;
  if (typeof content !== "string" || content === "") {
    throw badRequest("Missing or invalid 'content_base64'", "content_base64");
  }
  if (rawPath.includes("\0")) throw badRequest("Invalid 'path': contains a NUL byte", "path");

  const realRoot = realRootOf(root);
  // No lexical check against realRoot: an absolute path may legitimately name the root through a symlink
  // (e.g. /tmp → /private/tmp); only the real location counts, and that is where the file is written.
  let real: string | null;
  try {
    real = realpathLoose(resolve(realRoot, rawPath));
  } catch (err) {
    // E.g. a directory on the way the server may not search: where the path leads cannot be checked.
    throw clientPathError(err, rawPath);
  }
  if (real === null || !isInside(realRoot, real)) throw forbidden(PATH_ESCAPES);
  if (real === realRoot) throw badRequest(`Path is a directory: ${rawPath}`, "path");

  const size = validateBase64(content);
  if (size > maxBytes) throw payloadTooLarge(`File size ${size} exceeds limit ${maxBytes}`);
  const data = Buffer.from(content, "base64");

  const dir = dirname(real);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw clientPathError(err, rawPath);
  }
  // Re-check after mkdir: a component swapped for a symlink in the meantime must not redirect the write.
  let realDir: string;
  try {
    realDir = realpathSync(dir);
  } catch (err) {
    throw clientPathError(err, rawPath);
  }
  if (!isInside(realRoot, realDir)) throw forbidden(PATH_ESCAPES);
  const target = join(realDir, basename(real));
  let existing: ReturnType<typeof lstatSync>;
  try {
    existing = lstatSync(target, { throwIfNoEntry: false });
  } catch (err) {
    throw clientPathError(err, rawPath);
  }
  if (existing?.isDirectory()) throw badRequest(`Path is a directory: ${rawPath}`, "path");

  const tmp = join(realDir, `.upload-${process.pid}-${randomBytes(8).toString("hex")}.tmp`);
  try {
    writeFileSync(tmp, data, { flag: "wx" });
    renameSync(tmp, target);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already renamed or never created
    }
    throw clientPathError(err, rawPath);
  }
  return { path: target, bytes: data.length };
}

/**
 * `POST /files/upload-stream` (template §3.2): `{path, content_base64}` → write the file inside the workspace.
 * Check order follows the framework: path → content → confinement → base64 → size.
 */
import { randomBytes } from "node:crypto";
import {
  createWriteStream,
  lstatSync,
  mkdirSync,
  realpathSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { pipeline } from "node:stream/promises";
import { badRequest, forbidden, payloadTooLarge } from "../../kernel/errors.js";
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
  const real = confinedPath(root, rawPath);

  const size = validateBase64(content);
  if (size > maxBytes) throw payloadTooLarge(`File size ${size} exceeds limit ${maxBytes}`);
  const data = Buffer.from(content, "base64");

  const { realDir, target } = targetIn(root, real, rawPath);
  const tmp = tmpIn(realDir);
  try {
    writeFileSync(tmp, data, { flag: "wx" });
    renameSync(tmp, target);
  } catch (err) {
    removeTmp(tmp);
    throw clientPathError(err, rawPath);
  }
  return { path: target, bytes: data.length };
}

/**
 * Copies the contents of an open file (a Files API upload) to `rawPath` inside `root`, streamed (never held in
 * memory), with the confinement and atomic replacement of {@link writeUpload}. The caller opened `source` (and
 * closes it), so a source that went missing is its error to report, not a client's path problem.
 */
export async function copyUpload(root: string, rawPath: string, source: FileHandle): Promise<UploadResult> {
  if (rawPath === "" || rawPath.includes("\0")) throw badRequest("Invalid 'path'", "path");
  const real = confinedPath(root, rawPath);
  const { realDir, target } = targetIn(root, real, rawPath);
  const tmp = tmpIn(realDir);
  let bytes = 0;
  try {
    const out = createWriteStream(tmp, { flags: "wx" });
    const input = source.createReadStream({ start: 0, autoClose: false });
    input.on("data", (chunk) => {
      bytes += chunk.length;
    });
    await pipeline(input, out);
    renameSync(tmp, target);
  } catch (err) {
    removeTmp(tmp);
    throw clientPathError(err, rawPath);
  }
  return { path: target, bytes };
}

/** Where `rawPath` really leads (inside `root`, not the root itself), or a 4xx. */
function confinedPath(root: string, rawPath: string): string {
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
  return real;
}

/** Makes the target's directory and checks it again (a component swapped for a symlink must not redirect). */
function targetIn(root: string, real: string, rawPath: string): { realDir: string; target: string } {
  const realRoot = realRootOf(root);
  const dir = dirname(real);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw clientPathError(err, rawPath);
  }
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
  return { realDir, target };
}

const tmpIn = (dir: string) => join(dir, `.upload-${process.pid}-${randomBytes(8).toString("hex")}.tmp`);

function removeTmp(tmp: string): void {
  try {
    unlinkSync(tmp);
  } catch {
    // already renamed or never created
  }
}

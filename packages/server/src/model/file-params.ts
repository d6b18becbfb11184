/**
 * What an upload to the Files API may say, checked as the official API documents it: a `purpose` of the official
 * enum, an optional `expires_after {anchor: "created_at", seconds: 3600…2592000}` (files for `batch` expire after 30
 * days unless told otherwise), a file name without control characters.
 */

import { badRequest } from "../kernel/errors.js";
import type { FilePurpose } from "./records.js";

export const PURPOSES: readonly FilePurpose[] = [
  "assistants",
  "batch",
  "fine-tune",
  "vision",
  "user_data",
  "evals",
];

export const MIN_EXPIRY_SECONDS = 3600;
export const MAX_EXPIRY_SECONDS = 30 * 86_400;
/** Files uploaded for `batch` expire after this unless `expires_after` says otherwise. */
export const BATCH_EXPIRY_SECONDS = 30 * 86_400;

const MAX_FILENAME = 1024;

export function parsePurpose(raw: string | undefined): FilePurpose {
  if (raw === undefined || raw === "") throw badRequest("Missing required parameter: 'purpose'", "purpose");
  if (!(PURPOSES as readonly string[]).includes(raw)) {
    throw badRequest(
      `Invalid 'purpose': ${JSON.stringify(raw.slice(0, 100))}; expected one of ${PURPOSES.join(", ")}`,
      "purpose",
    );
  }
  return raw as FilePurpose;
}

/**
 * `expires_after` as multipart fields send it (`expires_after[anchor]`, `expires_after[seconds]`): the seconds after
 * creation the file lives (null: the purpose's default).
 */
export function parseExpiresAfter(anchor: string | undefined, seconds: string | undefined): number | null {
  if (anchor === undefined && seconds === undefined) return null;
  if (anchor !== "created_at") {
    throw badRequest(
      "Invalid 'expires_after[anchor]': the only supported anchor is 'created_at'",
      "expires_after.anchor",
    );
  }
  const n = seconds === undefined || seconds.trim() === "" ? Number.NaN : Number(seconds);
  if (!Number.isInteger(n) || n < MIN_EXPIRY_SECONDS || n > MAX_EXPIRY_SECONDS) {
    throw badRequest(
      `Invalid 'expires_after[seconds]': an integer between ${MIN_EXPIRY_SECONDS} (1 hour) and ` +
        `${MAX_EXPIRY_SECONDS} (30 days)`,
      "expires_after.seconds",
    );
  }
  return n;
}

/** When a file expires (null: never). */
export function expiryOf(purpose: FilePurpose, createdAt: number, seconds: number | null): number | null {
  if (seconds !== null) return createdAt + seconds;
  return purpose === "batch" ? createdAt + BATCH_EXPIRY_SECONDS : null;
}

/** The name a file is shown with (it is never a path: contents are stored under the file's id). */
export function parseFilename(raw: string | undefined): string {
  const name = (raw ?? "").trim();
  if (name === "") throw badRequest("The file part needs a file name (filename=… in its header)", "file");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(name)) {
    throw badRequest("Invalid file name: it contains control characters", "file");
  }
  if (name.length > MAX_FILENAME) throw badRequest(`Invalid file name: longer than ${MAX_FILENAME}`, "file");
  return name;
}

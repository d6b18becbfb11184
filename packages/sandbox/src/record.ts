// The persisted state of one sandbox, `meta.json` in its state directory: what adopting it after a restart needs.
// Written through a temporary file renamed over the old one, so a crash leaves the old record or the new, never half;
// a record of another version (or none, or an unreadable one) reads as null.
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxRecord } from "./types.js";

export async function writeRecord(dir: string, record: SandboxRecord): Promise<void> {
  const tmp = join(dir, `meta.json.${process.pid}.tmp`);
  await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, join(dir, "meta.json"));
}

export async function readRecord(dir: string): Promise<SandboxRecord | null> {
  try {
    const r = JSON.parse(await readFile(join(dir, "meta.json"), "utf8")) as SandboxRecord;
    return r.version === 1 ? r : null;
  } catch {
    return null;
  }
}

// Test helpers: a raw JSON-RPC client of the executor bridge (what the engine's app-server speaks to an exec-server),
// the image, and cleanup checks.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { buildImage, DEFAULT_IMAGE } from "../src/index.js";

export const MiB = 1024 ** 2;
export const GiB = 1024 ** 3;

/** A unique container name prefix per test run (tests never touch other runs' containers). */
export const runPrefix = (tag: string): string => `t${process.pid.toString(36)}${tag}-`;

export function tempRoot(tag: string): string {
  // Loop images on the host's disk (not /dev/shm): the kernel's loop driver wants a real file system under it.
  return mkdtempSync(join(process.env.SANDBOX_TEST_ROOT ?? "/var/tmp", `sbx-${tag}-`));
}

let imageReady: Promise<string> | null = null;
/** The default image, built when missing (cached by its content stamp). */
export function ensureImage(): Promise<string> {
  imageReady ??= buildImage({ log: (l) => console.log(l) }).then(() => DEFAULT_IMAGE);
  return imageReady;
}

export { ExecutorClient as ExecClient } from "../src/index.js";

/** Waits for `pred` with a deadline (no fixed sleeps). */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Containers whose name starts with the prefix. */
export function containersWithPrefix(prefix: string): string[] {
  const out = execFileSync("podman", ["ps", "-a", "--format", "{{.Names}}"], { encoding: "utf8" });
  return out.split("\n").filter((n) => n.startsWith(prefix));
}

/** Mounts and loop devices under a directory. */
export function mountsUnder(dir: string): string[] {
  const mounts = execFileSync("findmnt", ["-rn", "-o", "TARGET"], { encoding: "utf8" }).split("\n");
  const loops = execFileSync("losetup", ["-n", "-O", "BACK-FILE", "-l"], { encoding: "utf8" }).split("\n");
  return [...mounts, ...loops].map((l) => l.trim()).filter((l) => l.startsWith(dir));
}

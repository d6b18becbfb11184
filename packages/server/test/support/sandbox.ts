// Test helpers for the container backend: the image (built when missing), scratch roots on a real file system (loop
// images need one), and checks that a test left no container or mount behind.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { buildImage, DEFAULT_IMAGE } from "@codex-agent-api/sandbox";

let imageReady: Promise<string> | null = null;
/** The default sandbox image, built when missing (cached by its content stamp). */
export function ensureSandboxImage(): Promise<string> {
  imageReady ??= buildImage({ log: (l) => console.log(l) }).then(() => DEFAULT_IMAGE);
  return imageReady;
}

/** A scratch directory on the host's disk (not a tmpfs: the loop driver wants a real file system). */
export const sandboxRoot = (tag: string): string =>
  mkdtempSync(join(process.env.SANDBOX_TEST_ROOT ?? "/var/tmp", `cas-sbx-${tag}-`));

/** A container name prefix unique to this test process. */
export const sandboxPrefix = (tag: string): string => `t${process.pid.toString(36)}${tag}-`;

export function containersWithPrefix(prefix: string): string[] {
  const out = execFileSync("podman", ["ps", "-a", "--format", "{{.Names}}"], { encoding: "utf8" });
  return out.split("\n").filter((n) => n.startsWith(prefix));
}

export function mountsUnder(dir: string): string[] {
  const mounts = execFileSync("findmnt", ["-rn", "-o", "TARGET"], { encoding: "utf8" }).split("\n");
  return mounts.map((l) => l.trim()).filter((l) => l.startsWith(dir));
}

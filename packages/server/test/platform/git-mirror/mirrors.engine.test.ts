// The shared mirrors with the real git: the size and time limits of a fetch (a clear error, no credential in it, the
// call's configuration file gone), pruning of the least recently used unpinned mirrors, and a commit named by id.

import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commitFiles, gitOut, makeBareFrom, makeRepo } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MirrorError, Mirrors } from "../../../src/platform/git-mirror/mirrors.js";
import type { Remote } from "../../../src/platform/git-mirror/remote.js";

let root: string;
let bare: string;
let big: string;
const ids: Record<string, string> = {};

const local = (url: string): Remote => ({ url, kind: "local", auth: null, pin: null });
const settings = (over: Partial<ConstructorParameters<typeof Mirrors>[0]> = {}) => ({
  dir: join(root, `repos-${Math.random().toString(36).slice(2)}`),
  maxBytes: 1024 * 1024 * 1024,
  totalMaxBytes: 1024 * 1024 * 1024,
  timeoutMs: 60_000,
  ...over,
});

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "cas-mirror-"));
  const src = join(root, "src");
  ids.first = await makeRepo(src, { "a.txt": "a\n" });
  ids.second = await commitFiles(src, { "b.txt": "b\n" }, "second");
  // A commit no branch points at any more (reachable only by id).
  await gitOut(src, ["checkout", "-q", "-b", "gone"]);
  ids.gone = await commitFiles(src, { "c.txt": "c\n" }, "gone");
  await gitOut(src, ["checkout", "-q", "main"]);
  bare = join(root, "bare.git");
  await makeBareFrom(src, bare);
  // ~3 MiB of incompressible data.
  const bigSrc = join(root, "big-src");
  const { randomBytes } = await import("node:crypto");
  await makeRepo(bigSrc, { "blob.bin": randomBytes(3 * 1024 * 1024).toString("base64") });
  big = join(root, "big.git");
  await makeBareFrom(bigSrc, big);
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe("mirrors", () => {
  it("resolves the default branch, a branch, a tag-less commit id, and refuses a missing ref", async () => {
    const m = new Mirrors(settings());
    const req = { project: "p", remote: local(bare), depth: null };
    expect(await m.resolve({ ...req, ref: null })).toMatchObject({ commit: ids.second, branch: "main" });
    expect(await m.resolve({ ...req, ref: "gone" })).toMatchObject({ commit: ids.gone, branch: "gone" });
    expect(await m.resolve({ ...req, ref: ids.first! })).toMatchObject({ commit: ids.first, branch: null });
    const err = await m.resolve({ ...req, ref: "nope" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MirrorError);
    expect((err as MirrorError).code).toBe("repository_ref_not_found");
  });

  it("stops a fetch that grows the mirror beyond its limit", async () => {
    const s = settings({ maxBytes: 256 * 1024 });
    const m = new Mirrors(s);
    const err = await m
      .resolve({ project: "p", remote: local(big), ref: "main", depth: null })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MirrorError);
    expect((err as MirrorError).code).toBe("repository_too_large");
    expect((err as Error).message).toContain("262144 bytes");
    // The call's configuration file is gone with it.
    expect(readdirSync(join(s.dir, "scratch"))).toEqual([]);
  });

  it("stops a fetch that takes too long, without the credential in the message", async () => {
    // A git:// server that accepts and never answers.
    const stalled: Server = createServer(() => undefined);
    await new Promise<void>((r) => stalled.listen(0, "127.0.0.1", r));
    const port = (stalled.address() as { port: number }).port;
    try {
      const s = settings({ timeoutMs: 1500 });
      const m = new Mirrors(s);
      const remote: Remote = {
        url: `http://127.0.0.1:${port}/r.git`,
        kind: "http",
        auth: { header: "Basic c2VjcmV0LXZhbHVl", prefix: `http://127.0.0.1:${port}/` },
        pin: null,
      };
      const err = await m
        .resolve({ project: "p", remote, ref: "main", depth: null })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MirrorError);
      expect((err as MirrorError).code).toBe("repository_fetch_failed");
      expect((err as Error).message).toContain("timed out");
      expect((err as Error).message).not.toContain("c2VjcmV0LXZhbHVl");
      expect(readdirSync(join(s.dir, "scratch"))).toEqual([]);
    } finally {
      stalled.close();
    }
  });

  it("prunes the least recently used mirrors beyond the total, never a pinned or recently used one", async () => {
    const s = settings({ totalMaxBytes: 1 });
    const m = new Mirrors(s);
    const a = await m.resolve({ project: "p", remote: local(bare), ref: "main", depth: null });
    await m.pin(a.dir, "env_a/0", a.commit);
    const b = await m.resolve({ project: "p", remote: local(big), ref: "main", depth: null });
    // Both were used just now: kept by a prune with the default idle time.
    expect(await m.prune()).toBe(0);
    await m.prune(0);
    const left = readdirSync(join(s.dir, "mirrors", "p")).filter((n) => n.endsWith(".git"));
    expect(left).toEqual([a.dir.split("/").at(-1)]);
    expect(b.dir).not.toBe(a.dir);
    await m.unpin(a.dir, "env_a/0");
    expect(await m.pins(a.dir)).toEqual([]);
    expect(await m.prune(0)).toBe(1);
  });
});

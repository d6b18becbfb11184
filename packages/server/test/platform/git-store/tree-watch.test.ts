import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TreeChanges, TreeWatch } from "../../../src/platform/git-store/tree-watch.js";

let base: string;
let root: string;
let watch: TreeWatch | null;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "tree-watch-"));
  root = join(base, "ws");
  mkdirSync(join(root, "a", "b"), { recursive: true });
  mkdirSync(join(root, "node_modules", "pkg"), { recursive: true });
  mkdirSync(join(root, ".git", "objects"), { recursive: true });
  writeFileSync(join(root, "a", "b", "f.txt"), "one\n");
  writeFileSync(join(root, "top.txt"), "top\n");
  watch = null;
});

afterEach(() => {
  watch?.close();
  rmSync(base, { recursive: true, force: true });
});

async function started(limits?: Parameters<typeof TreeWatch.start>[3]): Promise<TreeWatch> {
  const w = await TreeWatch.start(root, new Set(["node_modules"]), join(base, "barrier"), limits);
  if (!w) throw new Error("the tree could not be watched");
  watch = w;
  // Right after the start nothing is known of what changed: a full scan comes first.
  await w.settle();
  expect(w.take()).toEqual({ kind: "unknown" });
  return w;
}

async function taken(w: TreeWatch): Promise<TreeChanges> {
  await w.settle();
  return w.take();
}

describe("TreeWatch", () => {
  it("answers none when nothing changed, and keeps the changes until they are taken", async () => {
    const w = await started();
    expect(w.size).toBe(3); // the root, a, a/b: not .git, not node_modules
    await w.settle();
    expect(w.quiet()).toBe(true);
    expect(await taken(w)).toEqual({ kind: "none" });
    appendFileSync(join(root, "a", "b", "f.txt"), "two\n");
    await w.settle();
    expect(w.quiet()).toBe(false);
    expect(await taken(w)).toEqual({ kind: "paths", paths: ["a/b/f.txt"] });
    expect(await taken(w)).toEqual({ kind: "none" });
  });

  it("names new, deleted and changed files, each once", async () => {
    const w = await started();
    writeFileSync(join(root, "a", "new.txt"), "n");
    writeFileSync(join(root, "a", "new.txt"), "nn");
    rmSync(join(root, "top.txt"));
    expect(await taken(w)).toEqual({ kind: "paths", paths: ["a/new.txt", "top.txt"] });
  });

  it("names a new directory (which covers what was written in it before its own watch) and watches it", async () => {
    const w = await started();
    mkdirSync(join(root, "a", "fresh", "deep"), { recursive: true });
    writeFileSync(join(root, "a", "fresh", "deep", "x.txt"), "x");
    expect(await taken(w)).toEqual({ kind: "paths", paths: ["a/fresh"] });
    expect(w.size).toBe(5);
    writeFileSync(join(root, "a", "fresh", "deep", "y.txt"), "y");
    expect(await taken(w)).toEqual({ kind: "paths", paths: ["a/fresh/deep/y.txt"] });
  });

  it("follows a moved directory under its new name", async () => {
    const w = await started();
    renameSync(join(root, "a"), join(root, "moved"));
    const changes = await taken(w);
    expect(changes.kind).toBe("paths");
    if (changes.kind === "paths") expect(changes.paths).toEqual(expect.arrayContaining(["a", "moved"]));
    appendFileSync(join(root, "moved", "b", "f.txt"), "more\n");
    expect(await taken(w)).toEqual({ kind: "paths", paths: ["moved/b/f.txt"] });
    // A directory deleted: its path, and its watches go.
    rmSync(join(root, "moved"), { recursive: true });
    const gone = await taken(w);
    expect(gone.kind).toBe("paths");
    if (gone.kind === "paths") expect(gone.paths).toContain("moved");
    expect(w.size).toBe(1);
    expect(w.broken).toBe(false);
  });

  it("does not look into .git nor excluded directories", async () => {
    const w = await started();
    writeFileSync(join(root, "node_modules", "pkg", "index.js"), "x");
    writeFileSync(join(root, ".git", "objects", "o"), "x");
    expect(await taken(w)).toEqual({ kind: "none" });
  });

  it("cannot vouch for a change to a .gitignore, nor for too many paths", async () => {
    const w = await started({ maxDirs: 100, maxPaths: 3, maxPathBytes: 1024 });
    writeFileSync(join(root, "a", ".gitignore"), "*.log\n");
    expect(await taken(w)).toEqual({ kind: "unknown" });
    for (const n of [1, 2, 3]) writeFileSync(join(root, `n${n}.txt`), "x");
    expect((await taken(w)).kind).toBe("paths");
    for (const n of [1, 2, 3, 4]) writeFileSync(join(root, `m${n}.txt`), "x");
    expect(await taken(w)).toEqual({ kind: "unknown" });
    // `forget`: the tree was rewritten by other means.
    w.forget();
    expect(await taken(w)).toEqual({ kind: "unknown" });
    expect(await taken(w)).toEqual({ kind: "none" });
  });

  it("does not watch a tree with more directories than its limit, and breaks when one grows past it", async () => {
    expect(
      await TreeWatch.start(root, new Set(), join(base, "barrier"), {
        maxDirs: 2,
        maxPaths: 10,
        maxPathBytes: 1024,
      }),
    ).toBeNull();
    const w = await started({ maxDirs: 3, maxPaths: 10, maxPathBytes: 1024 });
    mkdirSync(join(root, "a", "one-too-many"));
    expect(await taken(w)).toEqual({ kind: "unknown" });
    expect(w.broken).toBe(true);
  });

  it("breaks when the whole tree is replaced", async () => {
    const w = await started();
    renameSync(root, join(base, "old"));
    mkdirSync(join(root, "a"), { recursive: true });
    expect(await taken(w)).toEqual({ kind: "unknown" });
    expect(w.broken).toBe(true);
  });

  it("is broken once closed", async () => {
    const w = await started();
    w.close();
    expect(w.broken).toBe(true);
    expect(await taken(w)).toEqual({ kind: "unknown" });
  });
});

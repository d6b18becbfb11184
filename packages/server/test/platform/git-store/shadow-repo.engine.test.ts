import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type CheckpointInfo,
  type CheckpointOptions,
  DEFAULT_EXCLUDES,
  GitNotFoundError,
  ScanError,
  ShadowRepo,
} from "../../../src/platform/git-store/index.js";
import { waitFor } from "../../support/fixture.js";

// ---- helpers -------------------------------------------------------------------------------------------

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" };
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("GIT_") && v !== undefined) env[k] = v;
  return env;
}

/** Runs git in a user repository the way a user would (never with the store's settings). */
function git(cwd: string, ...args: string[]): string {
  return execFileSync(
    "git",
    ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", ...args],
    { cwd, env: cleanEnv(), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
}

/** `git status` + `git log` of a user repository, without taking optional locks (no index refresh). */
function repoState(cwd: string): string {
  const status = git(
    cwd,
    "--no-optional-locks",
    "status",
    "--porcelain=v1",
    "--branch",
    "--untracked-files=all",
  );
  let log = "";
  try {
    log = git(cwd, "log", "--all", "--format=%H %s");
  } catch {
    log = "(no commits)";
  }
  return `${status}\n${log}`;
}

/** Every file under dir (recursively) with its content hash and mtime: proves a `.git` was not touched. */
function fingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      const st = lstatSync(join(dir, path));
      if (entry.isDirectory()) walk(path);
      else out[path] = `${sha(readFileSync(join(dir, path)))}:${st.mtimeMs}:${st.ino}`;
    }
  };
  walk("");
  return out;
}

const sha = (data: Buffer | string) => createHash("sha1").update(data).digest("hex");

/** The workspace as content (no `.git` anywhere): what a restore must reproduce exactly. */
function snapshot(root: string, opts: { skip?: string[] } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.name === ".git" || opts.skip?.some((s) => path === s || path.startsWith(`${s}/`))) continue;
      const full = join(root, path);
      if (entry.isDirectory()) walk(path);
      else if (entry.isSymbolicLink()) out[path] = `link:${readlinkSync(full)}`;
      else out[path] = `file:${sha(readFileSync(full))}:${lstatSync(full).mode & 0o111 ? "x" : "-"}`;
    }
  };
  walk("");
  return out;
}

let base: string;
let ws: string;
let store: string;
const opened: ShadowRepo[] = [];

function write(rel: string, content: string | Buffer): void {
  mkdirSync(dirname(join(ws, rel)), { recursive: true });
  writeFileSync(join(ws, rel), content);
}
const read = (rel: string) => readFileSync(join(ws, rel), "utf8");
const stamp = (rel: string) => {
  const st = lstatSync(join(ws, rel));
  return { ino: st.ino, mtimeMs: st.mtimeMs };
};

async function open(opts: Partial<CheckpointOptions> = {}): Promise<ShadowRepo> {
  const repo = await ShadowRepo.open(store, ws, opts);
  opened.push(repo);
  return repo;
}

async function must(p: Promise<CheckpointInfo | null>): Promise<CheckpointInfo> {
  const info = await p;
  if (!info) throw new Error("expected a new checkpoint, got null (tree unchanged)");
  return info;
}

beforeAll(() => {
  try {
    execFileSync("git", ["--version"], { env: cleanEnv(), stdio: "pipe" });
  } catch {
    throw new Error("git is not installed (or not on PATH): the checkpoint engine and its tests need it");
  }
});

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "checkpoints-test-"));
  ws = join(base, "ws");
  store = join(base, "store");
  mkdirSync(ws);
});

afterEach(() => {
  opened.length = 0;
  rmSync(base, { recursive: true, force: true });
});

/**
 * git through a wrapper that logs its arguments; `logged()`: each command so far, without the store's own options
 * (the directories and `-c …`).
 */
function loggingGit(): { wrapper: string; logged: () => string[] } {
  const calls = join(base, "git-calls");
  const wrapper = join(base, "git-logging");
  writeFileSync(wrapper, `#!/bin/sh\necho "$*" >> "${calls}"\nexec git "$@"\n`, { mode: 0o755 });
  const logged = () =>
    existsSync(calls)
      ? readFileSync(calls, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((l) => l.replace(/^.* -c user\.email=\S+ /, ""))
      : [];
  return { wrapper, logged };
}

const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} line ${i}\n`).join("");

// ---- tests ---------------------------------------------------------------------------------------------

describe("checkpoints", () => {
  it("captures shell-made changes: a modification, a binary file, a deletion and a rename", async () => {
    write("a.txt", lines(3, "a"));
    write("b.txt", "to be deleted\n");
    write("keep.txt", "kept\n");
    write("dir/old-name.txt", lines(20, "renamed"));
    const repo = await open();
    const first = await must(repo.checkpoint("baseline"));
    expect(first.parent).toBeNull();
    expect(first.stats).toEqual({ files: 4, insertions: 3 + 1 + 1 + 20, deletions: 0 });

    // What a shell command does: plain file writes, no editor tool involved.
    writeFileSync(join(ws, "a.txt"), `${lines(3, "a")}appended\n`);
    const binary = Buffer.from([0, 1, 2, 3, 255, 254, 0, 0, 10, 13]);
    write("img.bin", binary);
    unlinkSync(join(ws, "b.txt"));
    renameSync(join(ws, "dir/old-name.txt"), join(ws, "dir/new-name.txt"));
    const second = await must(repo.checkpoint("turn 1", { turn: "t1" }));
    expect(second.parent).toBe(first.id);
    expect(second.meta).toEqual({ turn: "t1" });
    expect(second.label).toBe("turn 1");

    const { files } = await repo.diff(null, second.id);
    const byPath = Object.fromEntries(files.map((f) => [f.path, f]));
    expect(byPath["a.txt"]).toEqual({
      path: "a.txt",
      status: "modified",
      insertions: 1,
      deletions: 0,
      binary: false,
    });
    expect(byPath["img.bin"]).toMatchObject({ status: "added", binary: true, insertions: 0, deletions: 0 });
    expect(byPath["b.txt"]).toMatchObject({ status: "deleted", deletions: 1, binary: false });
    expect(byPath["dir/new-name.txt"]).toMatchObject({
      status: "renamed",
      old_path: "dir/old-name.txt",
      insertions: 0,
      deletions: 0,
    });
    expect(files).toHaveLength(4);

    // The same against an explicit base, and as a patch (with and without the cap).
    expect((await repo.diff(first.id, second.id)).files).toEqual(files);
    const full = await repo.diff(null, second.id, { patch: true });
    expect(full.truncated).toBe(false);
    expect(full.patch).toContain("+appended");
    expect(full.patch).toContain("Binary files /dev/null and b/img.bin differ");
    expect(full.patch).toContain("rename to dir/new-name.txt");
    const cut = await repo.diff(null, second.id, { patch: true, maxPatchBytes: 40 });
    expect(cut.truncated).toBe(true);
    expect(Buffer.byteLength(cut.patch ?? "")).toBeLessThanOrEqual(40);
    // The baseline against nothing.
    expect((await repo.diff(null, first.id)).files.map((f) => f.status)).toEqual(Array(4).fill("added"));

    // File contents at either checkpoint.
    expect(await repo.fileAt(second.id, "img.bin")).toEqual(binary);
    expect((await repo.fileAt(first.id, "b.txt"))?.toString()).toBe("to be deleted\n");
    expect(await repo.fileAt(second.id, "b.txt")).toBeNull();
    expect(await repo.fileAt(second.id, "dir")).toBeNull();
    expect((await repo.fileAt(second.id, "./dir//new-name.txt"))?.toString()).toBe(lines(20, "renamed"));
    await expect(repo.fileAt(second.id, "../outside")).rejects.toMatchObject({ kind: "bad_request" });
    await expect(repo.fileAt("0".repeat(40), "a.txt")).rejects.toMatchObject({ kind: "not_found" });
    await expect(repo.diff(null, "not-an-id")).rejects.toMatchObject({ kind: "not_found" });

    expect((await repo.list()).map((c) => c.id)).toEqual([first.id, second.id]);
    expect(await repo.get(second.id)).toEqual(second);
    expect(await repo.get("f".repeat(40))).toBeUndefined();
  });

  it("makes no checkpoint for an unchanged tree and tells when it changed", async () => {
    write("a.txt", "a\n");
    write("sub/b.txt", "b\n");
    const repo = await open();
    expect(await repo.changedSince()).toBe(true); // no checkpoint yet
    const first = await must(repo.checkpoint("baseline"));
    expect(await repo.checkpoint("again")).toBeNull();
    expect(await repo.changedSince()).toBe(false);
    // A new mtime with the same content is no change.
    writeFileSync(join(ws, "a.txt"), "a\n");
    expect(await repo.checkpoint("touched")).toBeNull();
    write("sub/c.txt", "c\n");
    expect(await repo.changedSince()).toBe(true);
    expect(await repo.changedSince(first.id)).toBe(true);
    const second = await must(repo.checkpoint("after"));
    expect(await repo.changedSince()).toBe(false);
    expect(await repo.changedSince(first.id)).toBe(true);
    expect(second.stats).toEqual({ files: 1, insertions: 1, deletions: 0 });
    // A new ShadowRepo on the same store continues the same history.
    const reopened = await open();
    expect(await reopened.checkpoint("reopened")).toBeNull();
    expect((await reopened.list()).map((c) => c.id)).toEqual([first.id, second.id]);
    // The first object's idea of the latest checkpoint is now stale: it notices instead of forking history.
    write("by-the-other.txt", "x\n");
    const third = await must(reopened.checkpoint("from the other object"));
    expect(await repo.checkpoint("nothing new for this one either")).toBeNull();
    write("more.txt", "y\n");
    expect((await must(repo.checkpoint("continues"))).parent).toBe(third.id);
  });

  it("an unchanged small tree is confirmed without starting git; changes right after a scan are all found", async () => {
    // git through a wrapper that logs its arguments: a scan starts with `git ls-files` (other runs, like the
    // index refresh a little after a scan, happen in the background and are not counted).
    const { wrapper, logged } = loggingGit();
    const runs = () => logged().filter((l) => l.split(" ").includes("ls-files")).length;
    write("a.txt", "alpha\n");
    write("deep/er/b.txt", "bravo\n");
    write("node_modules/pkg/index.js", "x\n");
    const repo = await open({ git: wrapper });
    await must(repo.checkpoint("baseline"));
    // Files written moments before a scan are scanned again (coarse timestamps); once they are older than that
    // margin, an unchanged tree is confirmed by the walk alone.
    await waitFor(
      async () => {
        const scans = runs();
        expect(await repo.checkpoint("unchanged")).toBeNull();
        return runs() === scans || null;
      },
      10_000,
      "a checkpoint confirmed without a scan",
    );
    const before = runs();
    expect(await repo.checkpoint("quiet")).toBeNull();
    expect(await repo.checkpoint("still quiet")).toBeNull();
    expect(runs()).toBe(before); // no scan: the walk found nothing newer than the last one
    // What the engine's sandbox does in a workspace during each turn: placeholders made and removed again (the
    // directory's ctime moves, what it holds does not).
    mkdirSync(join(ws, ".codex"));
    rmSync(join(ws, ".codex"), { recursive: true });
    expect(await repo.checkpoint("placeholders came and went")).toBeNull();
    expect(runs()).toBe(before);
    // An excluded folder changing is not a change of the tree (the scan leaves it out too).
    write("node_modules/pkg/index.js", "y\n");
    expect(await repo.checkpoint("excluded only")).toBeNull();
    // Each kind of change, made at once after the previous scan, is seen: same-size content, deletion, mode,
    // rename, a new file deep down.
    write("deep/er/b.txt", "BRAVO\n");
    expect((await must(repo.checkpoint("content"))).stats).toMatchObject({ files: 1 });
    rmSync(join(ws, "a.txt"));
    expect((await must(repo.checkpoint("deleted"))).stats).toMatchObject({ files: 1, deletions: 1 });
    chmodSync(join(ws, "deep/er/b.txt"), 0o755);
    await must(repo.checkpoint("mode"));
    renameSync(join(ws, "deep/er/b.txt"), join(ws, "deep/b2.txt"));
    await must(repo.checkpoint("renamed"));
    write("deep/er/new/c.txt", "charlie\n");
    await must(repo.checkpoint("new deep file"));
    expect(read("deep/er/new/c.txt")).toBe("charlie\n");
    // A tree too large for the walk is scanned by git every time.
    for (let i = 0; i < 2100; i++) write(`many/f${i}.txt`, `${i}\n`);
    await must(repo.checkpoint("many files"));
    const large = runs();
    expect(await repo.checkpoint("large and unchanged")).toBeNull();
    expect(runs()).toBeGreaterThan(large);
  });

  it("a watched tree records what a full scan records, listing only what changed (or nothing)", async () => {
    const { wrapper, logged } = loggingGit();
    write(".gitignore", "*.log\n");
    write("a/b/f.txt", "one\n");
    write("a/g.txt", "g\n");
    write("top.txt", "top\n");
    write("node_modules/pkg/index.js", "x\n");
    const limits = { maxFileBytes: 1000 };
    // The same workspace, two stores: one watched (however small the tree), one scanned in full every time.
    const watched = await ShadowRepo.open(join(base, "store-w"), ws, {
      ...limits,
      git: wrapper,
      watchAfterMs: 0,
    });
    const full = await ShadowRepo.open(join(base, "store-f"), ws, { ...limits, watch: false });
    opened.push(watched, full);
    const headTree = (dir: string) =>
      execFileSync("git", [`--git-dir=${dir}`, "rev-parse", "refs/checkpoint-head^{tree}"], {
        env: cleanEnv(),
        encoding: "utf8",
      }).trim();
    const both = async (label: string) => {
      const [w, f] = [
        await watched.record(() => ({ label, meta: {} })),
        await full.record(() => ({ label, meta: {} })),
      ];
      expect(headTree(join(base, "store-w")), label).toBe(headTree(join(base, "store-f")));
      expect(w.head?.skipped, label).toEqual(f.head?.skipped);
      expect(w.head?.stats, label).toEqual(f.head?.stats);
      return w;
    };
    await both("baseline");
    await waitFor(() => watched.watched || null, 10_000, "the watch");
    await both("armed: the first scan after the watch started is a full one");
    const steps: Array<[string, () => void]> = [
      ["content", () => write("a/b/f.txt", "two\n")],
      [
        "new and deleted files",
        () => {
          write("a/n.txt", "n\n");
          rmSync(join(ws, "top.txt"));
        },
      ],
      [
        "a new directory tree",
        () => {
          write("c/d/e/x.txt", "x\n");
          write("c/y.txt", "y\n");
        },
      ],
      ["a file in it", () => write("c/d/e/z.txt", "z\n")],
      ["a directory renamed", () => renameSync(join(ws, "c"), join(ws, "c2"))],
      ["a change under its new name", () => write("c2/d/e/x.txt", "x2\n")],
      ["a directory deleted", () => rmSync(join(ws, "c2"), { recursive: true })],
      ["a mode", () => chmodSync(join(ws, "a/b/f.txt"), 0o755)],
      ["a symlink", () => symlinkSync("b/f.txt", join(ws, "a/link"))],
      [
        "a file that became a directory",
        () => {
          rmSync(join(ws, "a/n.txt"));
          write("a/n.txt/inner.txt", "i\n");
        },
      ],
      ["an ignored file", () => write("a/debug.log", "log\n")],
      ["an excluded directory's file", () => write("node_modules/pkg/other.js", "y\n")],
      ["a file too large", () => write("a/big.bin", Buffer.alloc(5000, 1))],
      ["and small again", () => write("a/big.bin", "small\n")],
      ["a new .gitignore rule", () => write("a/.gitignore", "b/\n")],
    ];
    for (const [label, change] of steps) {
      change();
      const before = logged().length;
      await both(label);
      const ran = logged().slice(before);
      // Only `.gitignore` changes need the whole tree listed again.
      const fullListing = ran.some(
        (l) =>
          /^ls-files -z (-t --others --modified|--modified|--others --exclude-standard)( |$)/.test(l) &&
          !l.includes(" -- "),
      );
      expect(fullListing, `${label}: ${ran.join(" | ")}`).toBe(label === "a new .gitignore rule");
    }
    // Nothing changed: no git at all.
    await both("settled");
    const quiet = logged().length;
    expect(await watched.checkpoint("quiet")).toBeNull();
    expect(
      logged()
        .slice(quiet)
        .filter((l) => !l.includes("update-index -q --refresh")),
    ).toEqual([]);
  });

  it("a watched tree's changes are not lost to a scan that failed", async () => {
    write("a/f.txt", "one\n");
    let failNext = false;
    const repo = await open({
      watchAfterMs: 0,
      retries: 0,
      beforeIndexUpdate: () => {
        if (!failNext) return;
        failNext = false;
        throw new Error("the disk went away");
      },
    });
    await must(repo.checkpoint("baseline"));
    await waitFor(() => repo.watched || null, 10_000, "the watch");
    expect(await repo.checkpoint("armed")).toBeNull();
    write("a/f.txt", "two\n");
    failNext = true;
    await expect(repo.checkpoint("fails")).rejects.toThrow(ScanError);
    // The change the failed scan had taken from the watch is still found.
    const next = await must(repo.checkpoint("after the failure"));
    expect(next.stats).toMatchObject({ files: 1 });
    expect((await repo.fileAt(next.id, "a/f.txt"))?.toString()).toBe("two\n");
  });

  it("restores the earlier tree exactly, leaves unchanged files alone, and can be undone", async () => {
    write("same.txt", "never changes\n");
    write("deep/same-too.txt", "neither\n");
    write("edited.txt", "original\n");
    write("removed.txt", "will be deleted\n");
    write("tool.sh", "#!/bin/sh\necho hi\n");
    execFileSync("chmod", ["+x", join(ws, "tool.sh")]);
    symlinkSync("same.txt", join(ws, "link-to-same"));
    const repo = await open({ maxFileBytes: 1000 });
    const first = await must(repo.checkpoint("baseline"));
    const atFirst = snapshot(ws);
    const untouched = { same: stamp("same.txt"), deep: stamp("deep/same-too.txt") };

    writeFileSync(join(ws, "edited.txt"), "changed by the agent\n");
    unlinkSync(join(ws, "removed.txt"));
    write("created.txt", "new\n");
    write("new-dir/nested/file.txt", "new too\n");
    execFileSync("chmod", ["-x", join(ws, "tool.sh")]);
    await must(repo.checkpoint("turn 1"));
    // Changes after the last checkpoint, plus things no checkpoint holds.
    write("created-later.txt", "after the checkpoint\n");
    write("node_modules/pkg/index.js", "excluded\n");
    write("big.bin", Buffer.alloc(5000, 1));
    const beforeRestore = snapshot(ws);

    const dry = await repo.restore(first.id, { dryRun: true });
    expect(dry.safety).toBeNull();
    expect(dry.undo).toBeNull();
    expect(dry.restored).toBeNull();
    expect(dry.changes.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: "created-later.txt", action: "delete" },
      { path: "created.txt", action: "delete" },
      { path: "edited.txt", action: "write" },
      { path: "new-dir/nested/file.txt", action: "delete" },
      { path: "removed.txt", action: "write" },
      { path: "tool.sh", action: "write" },
    ]);
    expect(snapshot(ws)).toEqual(beforeRestore); // a dry run changes nothing
    const countBefore = (await repo.list()).length;
    expect(countBefore).toBe(2);

    const result = await repo.restore(first.id);
    expect(result.changes).toHaveLength(6);
    expect(result.safety?.label).toBe("before restore");
    expect(result.undo).toBe(result.safety?.id);
    expect(result.restored?.meta).toEqual({ restored_from: first.id });
    // Exactly the first tree, plus what no checkpoint holds (left in place).
    expect(snapshot(ws, { skip: ["node_modules", "big.bin"] })).toEqual(atFirst);
    expect(read("node_modules/pkg/index.js")).toBe("excluded\n");
    expect(lstatSync(join(ws, "big.bin")).size).toBe(5000);
    expect(existsSync(join(ws, "new-dir"))).toBe(false);
    expect(stamp("same.txt")).toEqual(untouched.same);
    expect(stamp("deep/same-too.txt")).toEqual(untouched.deep);
    // The latest checkpoint describes the workspace: nothing new to record.
    expect(await repo.checkpoint("after restore")).toBeNull();
    expect((await repo.list()).length).toBe(countBefore + 2);

    // Undo: back to the state just before the restore, including the change no checkpoint had seen yet.
    const undo = await repo.restore(result.undo as string);
    expect(undo.safety).toBeNull(); // the workspace matched the latest checkpoint already
    expect(snapshot(ws)).toEqual(beforeRestore);
    expect(stamp("same.txt")).toEqual(untouched.same);
  });

  it("refuses a restore that would remove something no checkpoint holds", async () => {
    write("thing", "a file at first\n");
    const repo = await open();
    const first = await must(repo.checkpoint("baseline"));
    unlinkSync(join(ws, "thing"));
    mkdirSync(join(ws, "thing"));
    git(join(ws, "thing"), "init", "-q");
    write("thing/inside.txt", "in a nested repository\n");
    await must(repo.checkpoint("nested repo where a file was"));
    await expect(repo.restore(first.id, { dryRun: true })).rejects.toMatchObject({ kind: "conflict" });
    await expect(repo.restore(first.id)).rejects.toMatchObject({ kind: "conflict" });
    expect(existsSync(join(ws, "thing/.git/HEAD"))).toBe(true);
    expect(read("thing/inside.txt")).toBe("in a nested repository\n");
  });

  it("keeps a workspace that is a repository and nested repositories intact, capturing their files", async () => {
    // The workspace is a repository on a branch, with a commit and uncommitted work.
    write("README.md", "root\n");
    git(ws, "init", "-q");
    git(ws, "add", "README.md");
    git(ws, "commit", "-qm", "root commit");
    git(ws, "checkout", "-qb", "feature");
    write("work.txt", "uncommitted\n");
    // A nested repository with a commit (a clone, say), and one without any commit.
    write("lib/src.txt", "lib source\n");
    write("lib/.gitignore", "*.o\n");
    write("lib/obj.o", "ignored by the nested .gitignore\n");
    git(join(ws, "lib"), "init", "-q");
    git(join(ws, "lib"), "add", ".");
    git(join(ws, "lib"), "commit", "-qm", "lib commit");
    write("lib/dirty.txt", "untracked in lib\n");
    write("fresh/e.txt", "in a repository without commits\n");
    git(join(ws, "fresh"), "init", "-q");
    const repos = ["", "lib", "fresh"].map((d) => join(ws, d));
    const states = repos.map(repoState);
    const dotGits = repos.map((r) => fingerprint(join(r, ".git")));
    const head = git(ws, "rev-parse", "HEAD").trim();

    const repo = await open();
    const first = await must(repo.checkpoint("baseline"));
    expect(first.workspace_git).toEqual({ head, branch: "feature" });
    expect((await repo.fileAt(first.id, "lib/src.txt"))?.toString()).toBe("lib source\n");
    expect((await repo.fileAt(first.id, "lib/dirty.txt"))?.toString()).toBe("untracked in lib\n");
    expect((await repo.fileAt(first.id, "fresh/e.txt"))?.toString()).toBe(
      "in a repository without commits\n",
    );
    expect(await repo.fileAt(first.id, "lib/obj.o")).toBeNull();
    expect(first.skipped).toContainEqual({ path: "lib/obj.o", reason: "excluded" });
    const paths = (await repo.diff(null, first.id)).files.map((f) => f.path);
    expect(paths.filter((p) => p.split("/").includes(".git"))).toEqual([]);
    expect(paths.sort()).toEqual(
      ["README.md", "work.txt", "lib/src.txt", "lib/.gitignore", "lib/dirty.txt", "fresh/e.txt"].sort(),
    );

    // Changes inside and outside the nested repositories, and a nested repository made later.
    writeFileSync(join(ws, "lib/src.txt"), "lib source, edited\n");
    write("fresh/e2.txt", "another\n");
    write("work.txt", "edited\n");
    write("later/x.txt", "a repository created after the baseline\n");
    git(join(ws, "later"), "init", "-q");
    const second = await must(repo.checkpoint("turn"));
    const changed = (await repo.diff(null, second.id)).files.map((f) => `${f.status} ${f.path}`);
    expect(changed.sort()).toEqual(
      ["modified lib/src.txt", "added fresh/e2.txt", "modified work.txt", "added later/x.txt"].sort(),
    );
    // Checkpointing changed no repository.
    expect(repos.map((r) => fingerprint(join(r, ".git")))).toEqual(dotGits);

    await repo.restore(first.id);
    expect(repos.map((r) => fingerprint(join(r, ".git")))).toEqual(dotGits);
    // The later repository lost the file made after the baseline, not its .git.
    expect(existsSync(join(ws, "later/x.txt"))).toBe(false);
    expect(readdirSync(join(ws, "later"))).toEqual([".git"]);
    rmSync(join(ws, "later"), { recursive: true });
    expect(repos.map(repoState)).toEqual(states);
  });

  it("skips and lists a 50 MB file, excluded folders and ignored files", async () => {
    write(".gitignore", "*.log\n");
    write("debug.log", "ignored\n");
    write("src/main.ts", "code\n");
    write("node_modules/dep/index.js", "dependency\n");
    write("pkg/build/out.js", "build output\n");
    writeFileSync(join(ws, "huge.bin"), Buffer.alloc(50 * 1024 * 1024, 7));
    const repo = await open();
    const cp = await must(repo.checkpoint("baseline"));
    expect(cp.skipped).toContainEqual({ path: "huge.bin", reason: "too_large", size: 50 * 1024 * 1024 });
    expect(cp.skipped).toContainEqual({ path: "debug.log", reason: "excluded" });
    expect(cp.skipped).toContainEqual({ path: "node_modules/", reason: "excluded" });
    expect(cp.skipped).toContainEqual({ path: "pkg/build/", reason: "excluded" });
    expect(cp.skipped_more).toBe(0);
    expect(await repo.fileAt(cp.id, "huge.bin")).toBeNull();
    expect((await repo.diff(null, cp.id)).files.map((f) => f.path).sort()).toEqual([
      ".gitignore",
      "src/main.ts",
    ]);
    expect((await repo.get(cp.id))?.skipped).toEqual(cp.skipped);
  });

  it("drops a file that grew past the cap, and takes custom excludes instead of the defaults", async () => {
    write("data.bin", Buffer.alloc(100, 0));
    write("node_modules/x.js", "captured when the defaults are replaced\n");
    write("scratch.tmp", "excluded by the custom list\n");
    const repo = await open({ maxFileBytes: 1024, exclude: ["*.tmp"] });
    const first = await must(repo.checkpoint("baseline"));
    expect((await repo.fileAt(first.id, "node_modules/x.js"))?.toString()).toContain("captured");
    expect(first.skipped).toEqual([{ path: "scratch.tmp", reason: "excluded" }]);
    write("data.bin", Buffer.alloc(2048, 0));
    const second = await must(repo.checkpoint("grew"));
    expect(second.skipped).toContainEqual({ path: "data.bin", reason: "too_large", size: 2048 });
    expect((await repo.diff(null, second.id)).files).toEqual([
      { path: "data.bin", status: "deleted", insertions: 0, deletions: 0, binary: true },
    ]);
    // Switching back to the defaults (plus one) on the same store drops what they now exclude.
    const again = await open({ maxFileBytes: 1024, exclude: [...DEFAULT_EXCLUDES, "*.tmp"] });
    const third = await must(again.checkpoint("defaults"));
    expect(await again.fileAt(third.id, "node_modules/x.js")).toBeNull();
    expect(third.skipped).toContainEqual({ path: "node_modules/", reason: "excluded" });
  });

  it("gitignore rules added later drop files from later checkpoints", async () => {
    write("keep.txt", "k\n");
    write("secret.env", "TOKEN=1\n");
    const repo = await open();
    const first = await must(repo.checkpoint("baseline"));
    expect(await repo.fileAt(first.id, "secret.env")).not.toBeNull();
    write(".gitignore", "*.env\n");
    const second = await must(repo.checkpoint("ignored now"));
    expect(await repo.fileAt(second.id, "secret.env")).toBeNull();
    expect(second.skipped).toContainEqual({ path: "secret.env", reason: "excluded" });
  });

  it("stores and restores bytes as they are, whatever .gitattributes says", async () => {
    write(".gitattributes", "* text eol=crlf\n*.txt filter=nosuch ident\n");
    write("lf.txt", "one\ntwo $Id$\n");
    write("crlf.md", "a\r\nb\r\n");
    const repo = await open();
    const first = await must(repo.checkpoint("baseline"));
    expect((await repo.fileAt(first.id, "lf.txt"))?.toString()).toBe("one\ntwo $Id$\n");
    expect((await repo.fileAt(first.id, "crlf.md"))?.toString()).toBe("a\r\nb\r\n");
    write("lf.txt", "changed\n");
    unlinkSync(join(ws, "crlf.md"));
    await repo.restore(first.id);
    expect(read("lf.txt")).toBe("one\ntwo $Id$\n");
    expect(read("crlf.md")).toBe("a\r\nb\r\n");
  });

  it("retries when the tree changes under the scan", async () => {
    write("stable.txt", "s\n");
    write("vanishing.txt", "v\n");
    write("becomes-dir", "a file for now\n");
    const calls: number[] = [];
    const repo = await open({
      beforeIndexUpdate: (attempt, paths) => {
        calls.push(attempt);
        if (attempt === 1) {
          expect(paths).toContain("becomes-dir");
          // Listed, then gone: a deletion git never sees as such; and a file that turns into a directory,
          // which makes `update-index` fail, so the scan starts over.
          unlinkSync(join(ws, "vanishing.txt"));
          unlinkSync(join(ws, "becomes-dir"));
          write("becomes-dir/inner.txt", "now a directory\n");
        }
      },
    });
    const cp = await must(repo.checkpoint("under churn"));
    expect(calls).toEqual([1, 2]);
    expect(await repo.fileAt(cp.id, "vanishing.txt")).toBeNull();
    expect((await repo.fileAt(cp.id, "becomes-dir/inner.txt"))?.toString()).toBe("now a directory\n");
    expect((await repo.diff(null, cp.id)).files.map((f) => f.path).sort()).toEqual([
      "becomes-dir/inner.txt",
      "stable.txt",
    ]);
  });

  it("gives up with a clear error when the tree never settles", async () => {
    write("a.txt", "a\n");
    let attempts = 0;
    const repo = await open({
      retries: 2,
      beforeIndexUpdate: (_attempt, paths) => {
        attempts++;
        for (const p of paths) {
          rmSync(join(ws, p), { recursive: true, force: true });
          write(`${p}/again.txt`, "x\n");
        }
      },
    });
    const err = await repo.checkpoint("never").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScanError);
    expect((err as Error).message).toMatch(/after 3 attempts/);
    expect(attempts).toBe(3);
  });

  it("keeps checkpointing while files appear and vanish concurrently", async () => {
    for (let i = 0; i < 200; i++) write(`base/f${i}.txt`, `${i}\n`);
    const repo = await open();
    await must(repo.checkpoint("baseline"));
    let stop = false;
    let churned = 0;
    const churn = async () => {
      while (!stop) {
        for (let i = 0; i < 20; i++) {
          const p = join(ws, `churn/d${i % 4}`);
          mkdirSync(p, { recursive: true });
          writeFileSync(join(p, `f${churned % 50}.txt`), `${churned}\n`);
          rmSync(join(ws, `churn/d${(i + 2) % 4}`), { recursive: true, force: true });
          churned++;
        }
        await new Promise((r) => setImmediate(r));
      }
    };
    const churning = churn();
    try {
      for (let i = 0; i < 15; i++) await repo.checkpoint(`during churn ${i}`);
    } finally {
      stop = true;
      await churning;
    }
    expect(churned).toBeGreaterThan(0);
    rmSync(join(ws, "churn"), { recursive: true, force: true });
    await repo.checkpoint("settled");
    expect(await repo.changedSince()).toBe(false);
  });

  it("ignores GIT_* variables of the server's environment", async () => {
    const decoy = join(base, "decoy");
    mkdirSync(decoy);
    writeFileSync(join(decoy, "decoy.txt"), "must not be captured\n");
    git(decoy, "init", "-q");
    const decoyGit = fingerprint(join(decoy, ".git"));
    write("real.txt", "captured\n");
    const saved = { ...process.env };
    Object.assign(process.env, {
      GIT_DIR: join(decoy, ".git"),
      GIT_WORK_TREE: decoy,
      GIT_INDEX_FILE: join(decoy, ".git", "index"),
      GIT_OBJECT_DIRECTORY: join(decoy, ".git", "objects"),
      GIT_CONFIG_PARAMETERS: "'core.hooksPath'='/nonexistent'",
      GIT_CONFIG_GLOBAL: join(decoy, "gitconfig"),
    });
    writeFileSync(join(decoy, "gitconfig"), "[core]\n\tautocrlf = true\n");
    try {
      const repo = await open();
      const cp = await must(repo.checkpoint("with a hostile environment"));
      expect((await repo.diff(null, cp.id)).files.map((f) => f.path)).toEqual(["real.txt"]);
      expect((await repo.fileAt(cp.id, "real.txt"))?.toString()).toBe("captured\n");
      write("real.txt", "edited\n");
      await repo.restore(cp.id);
      expect(read("real.txt")).toBe("captured\n");
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
    expect(fingerprint(join(decoy, ".git"))).toEqual(decoyGit);
    expect(existsSync(join(store, "HEAD"))).toBe(true);
  });

  it("prunes by count and age, repacks, reports disk usage and destroys the store", async () => {
    let now = 1_000_000;
    const repo = await open({ now: () => now });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      for (let f = 0; f < 60; f++) write(`gen${i}/file${f}.txt`, lines(20, `${i}-${f}`));
      ids.push((await must(repo.checkpoint(`cp ${i}`))).id);
      now += 100;
    }
    const loose = await repo.diskUsage();
    expect(await repo.repack()).toBe(true); // 5 x 60 new files: loose objects (fewer than 64 at a time)
    const packed = await repo.diskUsage();
    expect(packed).toBeLessThan(loose);
    expect(await repo.repack()).toBe(false); // nothing worth doing now
    expect((await repo.fileAt(ids[0] as string, "gen0/file0.txt"))?.toString()).toBe(lines(20, "0-0"));

    expect(await repo.prune({ keep: 3 })).toBe(2);
    expect((await repo.list()).map((c) => c.id)).toEqual(ids.slice(2));
    expect(await repo.get(ids[0] as string)).toBeUndefined();
    await expect(repo.diff(null, ids[2] as string)).rejects.toMatchObject({ kind: "not_found" });
    expect((await repo.diff(ids[2] as string, ids[4] as string)).files).toHaveLength(120);
    expect((await repo.fileAt(ids[2] as string, "gen2/file3.txt"))?.toString()).toBe(lines(20, "2-3"));

    // created_at: 1_000_200, 1_000_300, 1_000_400; now is 1_000_500.
    expect(await repo.prune({ olderThanSeconds: 250 })).toBe(1);
    expect((await repo.list()).map((c) => c.id)).toEqual(ids.slice(3));
    // The latest checkpoint always stays (it is what "unchanged" is measured against).
    expect(await repo.prune({ keep: 0, olderThanSeconds: 0 })).toBe(1);
    expect((await repo.list()).map((c) => c.id)).toEqual([ids[4]]);
    expect(await repo.checkpoint("still unchanged")).toBeNull();
    write("gen4/extra.txt", "more\n");
    const next = await must(repo.checkpoint("after pruning"));
    expect(next.parent).toBe(ids[4]);
    expect(await repo.diskUsage()).toBeLessThan(loose);

    // Blobs and trees a scan wrote that no checkpoint references yet survive housekeeping (the index holds them).
    write("gen4/unsaved.txt", "seen by a scan only\n");
    expect(await repo.changedSince()).toBe(true);
    expect(await repo.repack({ force: true })).toBe(true);
    const kept = await must(repo.checkpoint("after repack"));
    expect((await repo.fileAt(kept.id, "gen4/unsaved.txt"))?.toString()).toBe("seen by a scan only\n");

    await repo.destroy();
    expect(existsSync(store)).toBe(false);
    expect(read("gen4/extra.txt")).toBe("more\n");
    await expect(repo.list()).rejects.toThrow(/destroyed/);
  });

  it("refuses a store inside the workspace, a foreign directory, and a missing git", async () => {
    await expect(ShadowRepo.open(join(ws, ".checkpoints"), ws)).rejects.toThrow(/outside the workspace/);
    expect(existsSync(join(ws, ".checkpoints"))).toBe(false);
    await expect(ShadowRepo.open(base, ws)).rejects.toThrow(/outside the workspace/);
    const foreign = join(base, "foreign");
    mkdirSync(foreign);
    writeFileSync(join(foreign, "precious.txt"), "x");
    await expect(ShadowRepo.open(foreign, ws)).rejects.toThrow(/neither empty nor a checkpoint store/);
    await expect(ShadowRepo.open(store, ws, { git: join(base, "no-such-git") })).rejects.toBeInstanceOf(
      GitNotFoundError,
    );
  });
});

import { execFileSync } from "node:child_process";
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type CheckpointInfo,
  type CheckpointOptions,
  ShadowRepo,
} from "../../../src/platform/git-store/index.js";

// The scan's incremental paths: one `git status` (untracked cache, split index), only the changed files hashed, the
// index's mtime kept to the second its status started in, HEAD on the latest checkpoint, the commit object written
// without git.

let base: string;
let ws: string;
let store: string;
const opened: ShadowRepo[] = [];

function write(rel: string, content: string): void {
  mkdirSync(dirname(join(ws, rel)), { recursive: true });
  writeFileSync(join(ws, rel), content);
}

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

/** git against the store, the way an operator would inspect it. */
function storeGit(...args: string[]): string {
  const env: NodeJS.ProcessEnv = { GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" };
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("GIT_") && v !== undefined) env[k] = v;
  return execFileSync("git", [`--git-dir=${store}`, ...args], { env, encoding: "utf8", stdio: "pipe" });
}

const statuses = async (repo: ShadowRepo, id: string) =>
  (await repo.diff(null, id)).files.map((f) => `${f.status} ${f.path}`).sort();

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "checkpoints-incremental-"));
  ws = join(base, "ws");
  store = join(base, "store");
  mkdirSync(ws);
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((r) => r.close()));
  rmSync(base, { recursive: true, force: true });
});

describe("incremental scans", () => {
  it("hashes only what changed: edited, deleted and new files, a same-size rewrite keeping its mtime", async () => {
    for (let i = 0; i < 120; i++) write(`many/d${i % 6}/f${i}.txt`, `file ${i}\n`);
    write("same-size.txt", "aaaa\n");
    write("gone.txt", "bye\n");
    const hashed: string[][] = [];
    const repo = await open({ beforeIndexUpdate: (_attempt, paths) => void hashed.push([...paths].sort()) });
    const first = await must(repo.checkpoint("baseline"));
    expect(hashed[0]).toHaveLength(122);

    // Right after the scan (most likely in its very second): a rewrite of the same size whose mtime is set back to
    // what the index recorded, a deletion, a new file in a known directory and one in a new directory.
    const before = lstatSync(join(ws, "same-size.txt"));
    writeFileSync(join(ws, "same-size.txt"), "bbbb\n");
    utimesSync(join(ws, "same-size.txt"), before.atime, before.mtime);
    unlinkSync(join(ws, "gone.txt"));
    write("many/d3/new.txt", "new\n");
    write("fresh/dir/deep.txt", "deep\n");
    const second = await must(repo.checkpoint("changes"));
    expect(hashed[1]).toEqual(["fresh/dir/deep.txt", "gone.txt", "many/d3/new.txt", "same-size.txt"]);
    expect(await statuses(repo, second.id)).toEqual([
      "added fresh/dir/deep.txt",
      "added many/d3/new.txt",
      "deleted gone.txt",
      "modified same-size.txt",
    ]);
    expect(second.parent).toBe(first.id);
    expect(second.stats).toEqual({ files: 4, insertions: 3, deletions: 2 });
    expect((await repo.fileAt(second.id, "same-size.txt"))?.toString()).toBe("bbbb\n");

    // Nothing changed: nothing hashed, no checkpoint.
    expect(await repo.checkpoint("unchanged")).toBeNull();
    expect(hashed.slice(2).flat()).toEqual([]);
    // A directory's file replaced by a directory of that name, and a file moved between known directories.
    rmSync(join(ws, "many/d0/f0.txt"));
    write("many/d0/f0.txt/inside.txt", "now a directory\n");
    execFileSync("mv", [join(ws, "many/d1/f1.txt"), join(ws, "many/d2/f1.txt")]);
    const third = await must(repo.checkpoint("shapes"));
    expect(await statuses(repo, third.id)).toEqual([
      "added many/d0/f0.txt/inside.txt",
      "deleted many/d0/f0.txt",
      "renamed many/d2/f1.txt",
    ]);
  });

  it("keeps the index's mtime to the second its scan started in; later scans still see every change", async () => {
    write("sub/a.txt", "a\n");
    write("b.txt", "b\n");
    const repo = await open();
    await must(repo.checkpoint("baseline"));
    // A scan that starts in a second long gone (as when git runs into the next second): whatever it wrote is
    // stamped with that second, so git treats what it read as possibly changed.
    const realNow = Date.now.bind(Date);
    const started = Math.floor(realNow() / 1000) - 5;
    write("sub/c.txt", "c\n");
    const spy = vi.spyOn(Date, "now").mockImplementation(() => started * 1000 + 500);
    try {
      await must(repo.checkpoint("from the past"));
    } finally {
      spy.mockRestore();
    }
    expect(Math.floor(statSync(join(store, "index")).mtimeMs / 1000)).toBe(started);
    // Later scans find changes in the directories that scan read, and the index moves on.
    write("sub/d.txt", "d\n");
    writeFileSync(join(ws, "b.txt"), "B\n");
    const next = await must(repo.checkpoint("after"));
    expect(await statuses(repo, next.id)).toEqual(["added sub/d.txt", "modified b.txt"]);
    expect(statSync(join(store, "index")).mtimeMs / 1000).toBeGreaterThan(started + 1);
    expect(await repo.checkpoint("settled")).toBeNull();
  });

  it("writes commits git reads as its own, keeps HEAD on the latest, moves it there in an older store", async () => {
    mkdirSync(store);
    storeGit("init", "--bare", "--quiet", "--template=");
    expect(readFileSync(join(store, "HEAD"), "utf8")).toMatch(/^ref: refs\/heads\//);
    write("a.txt", "a\n");
    const repo = await open();
    const first = await must(repo.checkpoint("baseline"));
    expect(readFileSync(join(store, "HEAD"), "utf8")).toBe(`${first.id}\n`);
    write("a.txt", "changed\n");
    await repo.mark({ "turns/t1/after": null });
    const second = await must(repo.checkpoint("second, with a\nline break"));
    expect(storeGit("rev-parse", "HEAD").trim()).toBe(second.id);
    // The commit objects this process writes: what commit-tree would write for them, read by git as its own.
    const commit = storeGit("cat-file", "-p", second.id);
    expect(commit).not.toMatch(/^parent /m);
    expect(commit).toMatch(/^author codex-agent-api <checkpoints@localhost> \d+ \+0000$/m);
    expect(storeGit("show", `${second.id}:a.txt`)).toBe("changed\n");
    expect(storeGit("log", "-1", "--format=%s", second.id).trim()).toBe("second, with a line break");
    expect(JSON.parse(storeGit("log", "-1", "--format=%b", first.id)).label).toBe("baseline");
    storeGit("fsck", "--strict", "--no-dangling");
    // The split index git keeps for the store: a small index naming a shared one.
    expect(readdirSync(store).filter((name) => name.startsWith("sharedindex."))).toHaveLength(1);
    await repo.close();
    writeFileSync(join(store, "HEAD"), "ref: refs/heads/master\n");
    const reopened = await open();
    expect(readFileSync(join(store, "HEAD"), "utf8")).toBe(`${second.id}\n`);
    expect(await reopened.checkpoint("unchanged")).toBeNull();
  });
});

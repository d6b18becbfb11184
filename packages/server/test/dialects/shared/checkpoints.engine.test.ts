// Workspace checkpoints through the API, with the real engine and the scripted model: a turn's diff shows
// shell-made changes (modification, binary file, deletion, rename), restore reproduces an earlier tree exactly and
// can be undone, `conversation: revert` leaves only the kept turns in the model's next request, a fork continues
// from the right files and conversation, repositories in the workspace survive, large files are skipped and
// listed, a restore meets a running turn with 409, a shared workspace refuses restores; both dialects.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { scripts } from "@codex-agent-api/testkit";
import { APIError, NotFoundError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse, type ServerFixture, type SseEvent, startServer, waitFor } from "../../support/fixture.js";
import { expectApiError, rejection, sdk } from "../../support/openai-helpers.js";
import { giveToOwner } from "../../support/sandbox.js";

const OFFICIAL = { "OpenAI-Beta": "agents=v1" };
const shell = (cmd: string, reply: string) =>
  `Run this exact shell command and wait for it to finish: ${cmd}. Then reply with exactly: ${reply}`;

interface Checkpoint {
  id: string;
  object: string;
  session_id: string;
  turn_id: string | null;
  kind: string;
  label: string;
  parent_id: string | null;
  stats: { files: number; insertions: number; deletions: number };
  skipped: Array<{ path: string; reason: string; size?: number }>;
  skipped_more: number;
  workspace_git: { head: string | null; branch: string | null } | null;
}
interface FileChange {
  path: string;
  old_path?: string;
  status: string;
  binary: boolean;
  insertions: number;
  deletions: number;
}
interface Diff {
  object: string;
  from_id: string | null;
  to_id: string;
  turn_id?: string;
  stats: { files: number; insertions: number; deletions: number };
  files: FileChange[];
  patch?: string;
  patch_truncated?: boolean;
}
interface Restore {
  object: string;
  dry_run: boolean;
  conversation: string;
  changes: Array<{ path: string; action: string }>;
  safety_checkpoint: Checkpoint | null;
  undo_checkpoint_id: string | null;
  restored_checkpoint: Checkpoint | null;
  conversation_turns: { kept: number; dropped: number } | null;
}

const sha = (data: Buffer | string) => createHash("sha1").update(data).digest("hex");

/** The workspace as content (no `.git` anywhere): what a restore must reproduce exactly. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.name === ".git") continue;
      const full = join(root, path);
      if (entry.isDirectory()) walk(path);
      else if (entry.isSymbolicLink()) out[path] = `link:${readlinkSync(full)}`;
      else out[path] = `file:${sha(readFileSync(full))}`;
    }
  };
  walk("");
  return out;
}

/** Every file under dir with content hash, mtime and inode: proves a `.git` was not touched. */
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

function git(cwd: string, ...args: string[]): string {
  const env: NodeJS.ProcessEnv = { GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" };
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("GIT_") && v !== undefined) env[k] = v;
  const out = execFileSync(
    "git",
    [
      ...["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"],
      // On the container backend the workspace is the agent user's.
      ...["-c", "safe.directory=*"],
      ...args,
    ],
    { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
  giveToOwner(cwd);
  return out;
}

let f: ServerFixture;

beforeAll(async () => {
  // Official streams carry the checkpoint event only when the operator says so (strict SDK clients reject it).
  f = await startServer({ args: ["--checkpoint-events", "all"] });
});
afterAll(async () => {
  await f?.close();
});

// ---- template-dialect helpers ----------------------------------------------------------------------------

async function ok<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await f.json<T>(method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/**
 * A template session with a directory of its own; its workspace path. Its baseline is made in the background: a
 * list waits for it (so files the test writes next are changes made outside the agent, not part of the baseline).
 */
async function ownSession(): Promise<{ id: string; ws: string }> {
  const s = await ok<{ id: string }>("POST", "/v1/agents/sessions", { workspace_mode: "session" });
  const baseline = await ok<{ data: Checkpoint[] }>("GET", `/v1/agents/sessions/${s.id}/checkpoints`);
  expect(baseline.data.map((c) => [c.kind, c.stats.files])).toEqual([["baseline", 0]]);
  return { id: s.id, ws: await f.workspaceOf(s.id) };
}

/** Runs one template turn (streamed) and returns its frames and turn id. */
async function turn(id: string, input: string): Promise<{ turnId: string; frames: SseEvent[] }> {
  const res = await f.request("POST", `/v1/agents/sessions/${id}/events`, { input });
  expect(res.status).toBe(200);
  const frames = await readSse(res);
  const end = frames.at(-1)!;
  expect(end.event, JSON.stringify(end.data)).toBe("agent.session.turn.completed");
  return { turnId: String(end.data.turn_id), frames };
}

const write = (ws: string, rel: string, content: string | Buffer) => {
  mkdirSync(dirname(join(ws, rel)), { recursive: true });
  writeFileSync(join(ws, rel), content);
  giveToOwner(ws, join(ws, rel.split("/")[0]!));
};
const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} line ${i}\n`).join("");

/** User messages of the model requests captured since `from` (the engine's environment context left out). */
function userTexts(from: number): string[][] {
  return f.mock
    .requests()
    .slice(from)
    .map((r) => r.messageInputTexts("user").filter((t) => !t.startsWith("<environment_context>")));
}

// ---- tests ----------------------------------------------------------------------------------------------

describe("checkpoints API", () => {
  it("a turn's diff shows a shell-made modification, a binary file, a deletion and a rename (template)", async () => {
    const { id, ws } = await ownSession();
    write(ws, "a.txt", "hello\n");
    write(ws, "old.txt", lines(20, "moved"));
    write(ws, "gone.txt", lines(3, "gone"));
    const cmd =
      "printf 'more\\n' >> a.txt && printf 'A\\000B\\001C' > bin.dat && rm gone.txt && mv old.txt new.txt";
    const { turnId, frames } = await turn(id, shell(cmd, "changed"));

    // The turn's stream tells of its checkpoint, inside the turn (before its end).
    const created = frames.filter((e) => e.event === "agent.session.checkpoint.created");
    const mine = created.find((e) => (e.data.checkpoint as Checkpoint).kind === "turn");
    expect(mine, JSON.stringify(created)).toBeDefined();
    const event = mine!.data.checkpoint as Checkpoint;
    expect(mine!.data.turn_id).toBe(turnId);
    expect(event.turn_id).toBe(turnId);
    expect(event.id).toMatch(/^ckpt_[0-9a-f]{40}$/);
    // --no-renames in the stats: a.txt, bin.dat, gone.txt, old.txt (deleted) and new.txt (added).
    expect(event.stats).toEqual({ files: 5, insertions: 21, deletions: 23 });

    const d = await ok<Diff>("GET", `/v1/agents/sessions/${id}/turns/${turnId}/diff`);
    expect(d.object).toBe("agent.session.checkpoint.diff");
    expect(d.to_id).toBe(event.id);
    const byPath = Object.fromEntries(d.files.map((c) => [c.path, c]));
    expect(Object.keys(byPath).sort()).toEqual(["a.txt", "bin.dat", "gone.txt", "new.txt"]);
    expect(byPath["a.txt"]).toMatchObject({ status: "modified", insertions: 1, deletions: 0, binary: false });
    expect(byPath["bin.dat"]).toMatchObject({ status: "added", binary: true, insertions: 0 });
    expect(byPath["gone.txt"]).toMatchObject({ status: "deleted", deletions: 3 });
    expect(byPath["new.txt"]).toMatchObject({
      status: "renamed",
      old_path: "old.txt",
      insertions: 0,
      deletions: 0,
    });
    expect(d.stats).toEqual({ files: 4, insertions: 1, deletions: 3 });

    // The same through the checkpoint (against its parent), with the patch.
    const withPatch = await ok<Diff>(
      "GET",
      `/v1/agents/sessions/${id}/checkpoints/${event.id}/diff?patch=true`,
    );
    expect(withPatch.files).toEqual(d.files);
    expect(withPatch.patch).toContain("+more");
    expect(withPatch.patch).toMatch(/Binary files (\/dev\/null|a\/bin\.dat) and b\/bin\.dat differ/);
    expect(withPatch.patch_truncated).toBe(false);
    const raw = await f.request("GET", `/v1/agents/sessions/${id}/turns/${turnId}/diff?format=patch`);
    expect(raw.headers.get("content-type")).toMatch(/^text\/x-diff/);
    expect(await raw.text()).toContain("rename to new.txt");
    const cut = await ok<Diff>(
      "GET",
      `/v1/agents/sessions/${id}/turns/${turnId}/diff?patch=1&max_patch_bytes=40`,
    );
    expect(cut.patch!.length).toBeLessThanOrEqual(40);
    expect(cut.patch_truncated).toBe(true);

    // File contents at both ends of the turn.
    const bin = await f.request("GET", `/v1/agents/sessions/${id}/checkpoints/${d.to_id}/file?path=bin.dat`);
    expect(Buffer.from(await bin.arrayBuffer())).toEqual(Buffer.from([0x41, 0, 0x42, 1, 0x43]));
    const before = await f.request(
      "GET",
      `/v1/agents/sessions/${id}/checkpoints/${d.from_id}/file?path=gone.txt`,
    );
    expect(await before.text()).toBe(lines(3, "gone"));
    const missing = await f.json(
      "GET",
      `/v1/agents/sessions/${id}/checkpoints/${d.to_id}/file?path=gone.txt`,
    );
    expect(missing).toMatchObject({ status: 404, body: { type: "NotFoundError" } });
    const outside = await f.json("GET", `/v1/agents/sessions/${id}/checkpoints/${d.to_id}/file?path=../x`);
    expect(outside).toMatchObject({ status: 400, body: { type: "ValueError" } });

    // Listed, oldest first (template lists everything), filtered by turn.
    const all = await ok<{ data: Checkpoint[] }>("GET", `/v1/agents/sessions/${id}/checkpoints`);
    expect(all.data.map((c) => c.kind)).toEqual(["baseline", "external", "turn"]);
    expect(all.data[2]!.parent_id).toBe(all.data[1]!.id);
    const ofTurn = await ok<{ data: Checkpoint[] }>(
      "GET",
      `/v1/agents/sessions/${id}/checkpoints?turn_id=${turnId}`,
    );
    expect(ofTurn.data.map((c) => c.id)).toContain(event.id);
    expect(await ok<Checkpoint>("GET", `/v1/agents/sessions/${id}/checkpoints/${event.id}`)).toEqual(
      all.data[2],
    );
  });

  it("restore reproduces the earlier tree exactly, leaves unchanged files alone, and can be undone", async () => {
    const { id, ws } = await ownSession();
    write(ws, "same.txt", "never changes\n");
    write(ws, "mod.txt", "original\n");
    write(ws, "deleted/later.txt", "back again\n");
    write(ws, "tool", "#!/bin/sh\necho hi\n");
    execFileSync("chmod", ["+x", join(ws, "tool")]);
    const cmd =
      "printf 'changed\\n' > mod.txt && rm -r deleted && mkdir -p new/dir && printf 'x' > new/dir/made.txt && chmod -x tool";
    const first = await turn(id, shell(cmd, "done"));
    const after = snapshot(ws);
    const d = await ok<Diff>("GET", `/v1/agents/sessions/${id}/turns/${first.turnId}/diff`);
    const beforeId = d.from_id!;
    const stampOf = (rel: string) => {
      const st = lstatSync(join(ws, rel));
      return { ino: st.ino, mtimeMs: st.mtimeMs };
    };
    const same = stampOf("same.txt");

    // A dry run lists what would change and changes nothing.
    const dry = await ok<Restore>("POST", `/v1/agents/sessions/${id}/checkpoints/${beforeId}/restore`, {
      dry_run: true,
    });
    expect(dry.dry_run).toBe(true);
    expect(dry.undo_checkpoint_id).toBeNull();
    expect(dry.changes).toEqual(
      expect.arrayContaining([
        { path: "mod.txt", action: "write" },
        { path: "deleted/later.txt", action: "write" },
        { path: "new/dir/made.txt", action: "delete" },
        { path: "tool", action: "write" },
      ]),
    );
    expect(dry.changes).toHaveLength(4);
    expect(snapshot(ws)).toEqual(after);

    const r = await ok<Restore>("POST", `/v1/agents/sessions/${id}/checkpoints/${beforeId}/restore`, {});
    expect(r.dry_run).toBe(false);
    expect(r.conversation).toBe("keep");
    expect(r.changes).toEqual(dry.changes);
    expect(r.restored_checkpoint?.kind).toBe("restore");
    expect(existsSync(join(ws, "new/dir/made.txt"))).toBe(false);
    expect(readFileSync(join(ws, "deleted/later.txt"), "utf8")).toBe("back again\n");
    expect(readFileSync(join(ws, "mod.txt"), "utf8")).toBe("original\n");
    expect(lstatSync(join(ws, "tool")).mode & 0o111).not.toBe(0);
    expect(stampOf("same.txt")).toEqual(same);
    // Exactly the tree of that checkpoint: what it holds, file by file.
    for (const [path, content] of Object.entries(snapshot(ws))) {
      const res = await f.request(
        "GET",
        `/v1/agents/sessions/${id}/checkpoints/${beforeId}/file?path=${encodeURIComponent(path)}`,
      );
      expect(`file:${sha(Buffer.from(await res.arrayBuffer()))}`, path).toBe(content);
    }
    const restoredDiff = await ok<Diff>(
      "GET",
      `/v1/agents/sessions/${id}/checkpoints/${r.restored_checkpoint!.id}/diff?from=${beforeId}`,
    );
    expect(restoredDiff.files).toEqual([]);

    // Undo: the tree after the turn comes back.
    expect(r.undo_checkpoint_id).toBe(d.to_id);
    const undo = await ok<Restore>(
      "POST",
      `/v1/agents/sessions/${id}/checkpoints/${r.undo_checkpoint_id}/restore`,
      {
        dry_run: false,
      },
    );
    expect(undo.changes.length).toBe(4);
    expect(snapshot(ws)).toEqual(after);
    expect(stampOf("same.txt")).toEqual(same);

    // The session still works after restores.
    await turn(id, "Reply with exactly: still fine");
  });

  it("conversation: revert makes the model's next request hold only the kept turns; the undo brings them back", async () => {
    const { id, ws } = await ownSession();
    const t1 = shell("printf 1 > one.txt", "one");
    const t2 = shell("printf 2 > two.txt", "two");
    const t3 = "Reply with exactly: three";
    const first = await turn(id, t1);
    await turn(id, t2);
    await turn(id, t3);
    const cps = await ok<{ data: Checkpoint[] }>(
      "GET",
      `/v1/agents/sessions/${id}/checkpoints?turn_id=${first.turnId}`,
    );
    const afterFirst = cps.data.find((c) => c.kind === "turn")!;
    expect(afterFirst).toBeDefined();

    const dry = await ok<Restore>("POST", `/v1/agents/sessions/${id}/checkpoints/${afterFirst.id}/restore`, {
      conversation: "revert",
      dry_run: true,
    });
    expect(dry.conversation_turns).toEqual({ kept: 1, dropped: 2 });
    const r = await ok<Restore>("POST", `/v1/agents/sessions/${id}/checkpoints/${afterFirst.id}/restore`, {
      conversation: "revert",
    });
    expect(r.conversation).toBe("revert");
    expect(r.conversation_turns).toEqual({ kept: 1, dropped: 2 });
    expect(existsSync(join(ws, "two.txt"))).toBe(false);
    expect(readFileSync(join(ws, "one.txt"), "utf8")).toBe("1");

    let from = f.mock.requests().length;
    await turn(id, "Reply with exactly: four");
    expect(userTexts(from)).toEqual([[t1, "Reply with exactly: four"]]);

    // Undo (the safety checkpoint, conversation too): the files and the three turns come back; "four" was after.
    const undo = await ok<Restore>(
      "POST",
      `/v1/agents/sessions/${id}/checkpoints/${r.undo_checkpoint_id}/restore`,
      {
        conversation: "revert",
      },
    );
    expect(undo.conversation_turns).toEqual({ kept: 3, dropped: 0 });
    expect(readFileSync(join(ws, "two.txt"), "utf8")).toBe("2");
    from = f.mock.requests().length;
    await turn(id, "Reply with exactly: five");
    expect(userTexts(from)).toEqual([[t1, t2, t3, "Reply with exactly: five"]]);
  });

  it("a fork from a turn continues from that turn's files and conversation; the source is untouched", async () => {
    const { id, ws } = await ownSession();
    const t1 = shell("printf a > a.txt", "wrote a");
    const first = await turn(id, t1);
    await turn(id, shell("printf b > b.txt && rm a.txt", "wrote b"));

    const res = await f.json<{
      id: string;
      object: string;
      forked_from: { session_id: string; turn_id: string; conversation_turns: number };
      checkpoint: Checkpoint;
    }>("POST", `/v1/agents/sessions/${id}/turns/${first.turnId}/fork`, {});
    expect(res.status).toBe(201);
    const fork = res.body;
    expect(fork.object).toBe("session");
    expect(fork.id).not.toBe(id);
    expect(fork.forked_from).toMatchObject({ session_id: id, turn_id: first.turnId, conversation_turns: 1 });
    expect(fork.checkpoint).toMatchObject({ kind: "fork", session_id: fork.id });
    const forkWs = await f.workspaceOf(fork.id);
    expect(snapshot(forkWs)).toEqual({ "a.txt": `file:${sha("a")}` });
    expect(snapshot(ws)).toEqual({ "b.txt": `file:${sha("b")}` });
    // Its history is the conversation it was forked with: the first turn's items, as the source has them.
    type Listed = { data: Array<{ turn_id: string; item: { id: string; type: string; text?: string } }> };
    const sourceItems = (await ok<Listed>("GET", `/v1/agents/sessions/${id}/items`)).data;
    const forkItems = (await ok<Listed>("GET", `/v1/agents/sessions/${fork.id}/items`)).data;
    expect(forkItems).toEqual(sourceItems.filter((i) => i.turn_id === first.turnId));
    expect(forkItems.map((i) => i.item.text ?? null)).toContain("wrote a");

    const from = f.mock.requests().length;
    await turn(fork.id, "Reply with exactly: forked");
    expect(userTexts(from)).toEqual([[t1, "Reply with exactly: forked"]]);
    // The fork has checkpoints of its own; the source's list does not have them.
    const forkList = await ok<{ data: Checkpoint[] }>("GET", `/v1/agents/sessions/${fork.id}/checkpoints`);
    expect(forkList.data[0]).toMatchObject({ kind: "fork", id: fork.checkpoint.id });
    const srcList = await ok<{ data: Checkpoint[] }>("GET", `/v1/agents/sessions/${id}/checkpoints`);
    expect(srcList.data.map((c) => c.id)).not.toContain(fork.checkpoint.id);

    // A fork from a checkpoint with a new conversation.
    const last = srcList.data.at(-1)!;
    const fresh = await f.json<{ id: string; forked_from: { conversation_turns: number } }>(
      "POST",
      `/v1/agents/sessions/${id}/checkpoints/${last.id}/fork`,
      { conversation: "none" },
    );
    expect(fresh.status).toBe(201);
    expect(fresh.body.forked_from.conversation_turns).toBe(0);
    expect(snapshot(await f.workspaceOf(fresh.body.id))).toEqual({ "b.txt": `file:${sha("b")}` });
    const before = f.mock.requests().length;
    await turn(fresh.body.id, "Reply with exactly: new");
    expect(userTexts(before)).toEqual([["Reply with exactly: new"]]);
    // A new conversation: no history but its own turn.
    const freshItems = (await ok<Listed>("GET", `/v1/agents/sessions/${fresh.body.id}/items`)).data;
    expect(new Set(freshItems.map((i) => i.turn_id)).size).toBe(1);
    expect(freshItems.map((i) => i.turn_id)).not.toContain(first.turnId);
  });

  it("a goal: a checkpoint after every engine turn, the next continuation waiting for it", async () => {
    const { id } = await ownSession();
    const objective = "Objective: checkpointed goal";
    const mine = (r: { messageInputTexts(role: "user"): string[] }) =>
      r.messageInputTexts("user").some((t) => t.includes(objective));
    const exec = (cmd: string) =>
      scripts.functionCall("exec_command", { cmd, login: false, yield_time_ms: 30_000 });
    f.mock.enqueue(
      [
        exec("printf 1 > g1.txt"),
        scripts.assistantMessage("first part done"),
        exec("printf 2 > g2.txt"),
        scripts.updateGoal("complete"),
        scripts.assistantMessage("Goal complete."),
      ],
      mine,
    );
    const res = await f.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: objective,
      goal: { max_turns: 5 },
    });
    const frames = await readSse(res);
    expect(frames.at(-1)?.event).toBe("agent.session.turn.completed");
    expect(f.mock.pending(mine)).toBe(0);
    const turnId = String(frames.at(-1)!.data.turn_id);
    const events = frames
      .filter((e) => e.event === "agent.session.checkpoint.created")
      .map((e) => e.data.checkpoint as Checkpoint & { engine_turn: number | null });
    expect(events.map((c) => [c.kind, c.turn_id, c.stats.files])).toEqual([
      ["turn", turnId, 1],
      ["turn", turnId, 1],
    ]);
    const listed = await ok<{ data: Array<Checkpoint & { engine_turn: number | null }> }>(
      "GET",
      `/v1/agents/sessions/${id}/checkpoints?turn_id=${turnId}`,
    );
    expect(listed.data.map((c) => c.engine_turn)).toEqual([1, 2]);
    const first = await ok<Diff>("GET", `/v1/agents/sessions/${id}/checkpoints/${listed.data[0]!.id}/diff`);
    expect(first.files.map((c) => c.path)).toEqual(["g1.txt"]);
    const whole = await ok<Diff>("GET", `/v1/agents/sessions/${id}/turns/${turnId}/diff`);
    expect(whole.files.map((c) => c.path)).toEqual(["g1.txt", "g2.txt"]);
    // The conversation as it stood after the first engine turn: one of the goal's two engine turns.
    const dry = await ok<Restore>(
      "POST",
      `/v1/agents/sessions/${id}/checkpoints/${listed.data[0]!.id}/restore`,
      {
        dry_run: true,
        conversation: "revert",
      },
    );
    expect(dry.conversation_turns).toEqual({ kept: 1, dropped: 1 });
    expect(dry.changes).toEqual([{ path: "g2.txt", action: "delete" }]);
  });

  it("a workspace that is a repository and a nested repository survive a turn, a restore and its undo", async () => {
    const { id, ws } = await ownSession();
    write(ws, "README.md", "root\n");
    git(ws, "init", "-q");
    git(ws, "add", "README.md");
    git(ws, "commit", "-qm", "root commit");
    git(ws, "checkout", "-qb", "feature");
    write(ws, "lib/lib.txt", "lib v1\n");
    git(join(ws, "lib"), "init", "-q");
    git(join(ws, "lib"), "add", ".");
    git(join(ws, "lib"), "commit", "-qm", "lib commit");
    const head = git(ws, "rev-parse", "HEAD").trim();
    const dotGit = fingerprint(join(ws, ".git"));
    const libGit = fingerprint(join(ws, "lib/.git"));

    const t = await turn(
      id,
      shell("printf 'v2\\n' > lib/lib.txt && printf 'more\\n' >> README.md", "edited"),
    );
    const d = await ok<Diff>("GET", `/v1/agents/sessions/${id}/turns/${t.turnId}/diff`);
    expect(d.files.map((c) => c.path).sort()).toEqual(["README.md", "lib/lib.txt"]);
    const cp = await ok<Checkpoint>("GET", `/v1/agents/sessions/${id}/checkpoints/${d.to_id}`);
    expect(cp.workspace_git).toEqual({ head, branch: "feature" });
    const afterTurn = snapshot(ws);

    const r = await ok<Restore>("POST", `/v1/agents/sessions/${id}/checkpoints/${d.from_id}/restore`, {});
    expect(r.changes.map((c) => c.path).sort()).toEqual(["README.md", "lib/lib.txt"]);
    expect(readFileSync(join(ws, "lib/lib.txt"), "utf8")).toBe("lib v1\n");
    await ok<Restore>("POST", `/v1/agents/sessions/${id}/checkpoints/${r.undo_checkpoint_id}/restore`, {});
    expect(snapshot(ws)).toEqual(afterTurn);
    // The repositories' own .git directories: not a byte, not a timestamp changed (the user's index included).
    expect(fingerprint(join(ws, ".git"))).toEqual(dotGit);
    expect(fingerprint(join(ws, "lib/.git"))).toEqual(libGit);
    expect(git(ws, "rev-parse", "HEAD").trim()).toBe(head);
    expect(git(join(ws, "lib"), "log", "--format=%s")).toBe("lib commit\n");
  });

  it("a 50 MB file is left out and listed; a manual checkpoint answers 201, then 200 when nothing changed", async () => {
    const { id, ws } = await ownSession();
    write(ws, "small.txt", "small\n");
    write(ws, "big.bin", "");
    truncateSync(join(ws, "big.bin"), 50 * 1024 * 1024);
    write(ws, "node_modules/pkg/index.js", "module.exports = 1;\n");
    const made = await f.json<Checkpoint>("POST", `/v1/agents/sessions/${id}/checkpoints`, {
      label: "by hand",
    });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ kind: "manual", label: "by hand", session_id: id });
    expect(made.body.skipped).toEqual(
      expect.arrayContaining([
        { path: "big.bin", reason: "too_large", size: 50 * 1024 * 1024 },
        { path: "node_modules/", reason: "excluded" },
      ]),
    );
    const d = await ok<Diff>("GET", `/v1/agents/sessions/${id}/checkpoints/${made.body.id}/diff`);
    expect(d.files.map((c) => c.path)).toEqual(["small.txt"]);
    const again = await f.json<Checkpoint>("POST", `/v1/agents/sessions/${id}/checkpoints`);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(made.body.id);
    const file = await f.json(
      "GET",
      `/v1/agents/sessions/${id}/checkpoints/${made.body.id}/file?path=big.bin`,
    );
    expect(file.status).toBe(404);
  });

  it("409 for a restore, a fork or a manual checkpoint while a turn runs", async () => {
    const { id, ws } = await ownSession();
    write(ws, "x.txt", "x\n");
    const made = await ok<Checkpoint>("POST", `/v1/agents/sessions/${id}/checkpoints`);
    // The agent's command waits for a file the test writes: the turn runs until then.
    const res = await f.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: shell("while [ ! -f go ]; do sleep 0.05; done; printf done > y.txt", "released"),
    });
    await waitFor(
      async () => (await ok<{ status: string }>("GET", `/v1/agents/sessions/${id}`)).status === "in_progress",
      15_000,
      "the turn to run",
    );
    await waitFor(
      () =>
        f.mock
          .requests()
          .some((r) => r.messageInputTexts("user").some((t) => t.includes("while [ ! -f go ]"))),
      15_000,
      "the model request",
    );
    const restore = await f.json("POST", `/v1/agents/sessions/${id}/checkpoints/${made.id}/restore`, {});
    expect(restore).toMatchObject({ status: 409, body: { type: "ConflictError" } });
    expect(String((restore.body as { error: string }).error)).toMatch(/turn runs/);
    expect((await f.json("POST", `/v1/agents/sessions/${id}/checkpoints/${made.id}/fork`, {})).status).toBe(
      409,
    );
    expect((await f.json("POST", `/v1/agents/sessions/${id}/checkpoints`, {})).status).toBe(409);
    writeFileSync(join(ws, "go"), "");
    const frames = await readSse(res);
    expect(frames.at(-1)?.event).toBe("agent.session.turn.completed");
    // Once idle, the restore goes through (the turn's files go, the one written before the checkpoint stays).
    const r = await ok<Restore>("POST", `/v1/agents/sessions/${id}/checkpoints/${made.id}/restore`, {});
    expect(r.changes.map((c) => c.path).sort()).toEqual(["go", "y.txt"]);
    expect(snapshot(ws)).toEqual({ "x.txt": `file:${sha("x\n")}` });
  });

  it("a shared workspace: checkpoints name their session; restore is refused (dry run allowed), fork works", async () => {
    const s = await ok<{ id: string }>("POST", "/v1/agents/sessions", {});
    const name = `shared-${s.id}.txt`;
    const t = await turn(s.id, shell(`printf shared > ${name}`, "ok"));
    const d = await ok<Diff>("GET", `/v1/agents/sessions/${s.id}/turns/${t.turnId}/diff`);
    expect(d.files.map((c) => c.path)).toEqual([name]);
    // Other sessions' own directories are not part of the shared root's checkpoints.
    const cp = await ok<Checkpoint>("GET", `/v1/agents/sessions/${s.id}/checkpoints/${d.to_id}`);
    expect(cp.session_id).toBe(s.id);
    const tree = await f.request(
      "GET",
      `/v1/agents/sessions/${s.id}/checkpoints/${d.to_id}/file?path=${name}`,
    );
    expect(await tree.text()).toBe("shared");
    const refused = await f.json("POST", `/v1/agents/sessions/${s.id}/checkpoints/${d.from_id}/restore`, {});
    expect(refused).toMatchObject({ status: 409, body: { type: "ConflictError" } });
    expect(String((refused.body as { error: string }).error)).toMatch(/shares its workspace/);
    const dry = await ok<Restore>("POST", `/v1/agents/sessions/${s.id}/checkpoints/${d.from_id}/restore`, {
      dry_run: true,
    });
    expect(dry.changes).toContainEqual({ path: name, action: "delete" });
    expect(existsSync(join(f.workspace, name))).toBe(true);
    const fork = await f.json<{ id: string }>(
      "POST",
      `/v1/agents/sessions/${s.id}/checkpoints/${d.to_id}/fork`,
      {},
    );
    expect(fork.status).toBe(201);
    expect(readFileSync(join(await f.workspaceOf(fork.body.id), name), "utf8")).toBe("shared");
  });

  it("validation errors in the template shape", async () => {
    const { id } = await ownSession();
    const bad = await f.json("GET", `/v1/agents/sessions/${id}/checkpoints/nope`);
    expect(bad).toMatchObject({ status: 400, body: { type: "ValueError" } });
    const unknown = await f.json("GET", `/v1/agents/sessions/${id}/checkpoints/ckpt_${"0".repeat(40)}`);
    expect(unknown).toMatchObject({ status: 404, body: { type: "NotFoundError" } });
    const body = await f.json(
      "POST",
      `/v1/agents/sessions/${id}/checkpoints/ckpt_${"0".repeat(40)}/restore`,
      {
        conversation: "sideways",
      },
    );
    expect(body).toMatchObject({ status: 400, body: { type: "ValueError" } });
    expect(String((body.body as { error: string }).error)).toMatch(/conversation/);
    const session = await f.json("GET", "/v1/agents/sessions/sess_nope/checkpoints");
    expect(session).toMatchObject({ status: 404, body: { type: "NotFoundError" } });
    const noTurn = await f.json("GET", `/v1/agents/sessions/${id}/turns/turn_nope/diff`);
    expect(noTurn).toMatchObject({ status: 404, body: { type: "NotFoundError" } });
  });

  it("the official dialect: the stream event, diff, restore and fork through the openai SDK", async () => {
    const client = sdk(f);
    const s = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: { type: "none" },
    });
    const ws = await f.workspaceOf(s.id);
    await client.get(`/agents/sessions/${s.id}/checkpoints`, { headers: OFFICIAL }); // the baseline is made
    write(ws, "keep.txt", "keep\n");
    const stream = await client.beta.agents.sessions.stream(s.id, {
      input: shell("printf 'new\\n' > made.txt && rm keep.txt", "official"),
    });
    const events: Array<{ type: string; turn_id?: string | null; checkpoint?: Checkpoint }> = [];
    for await (const e of stream) events.push(e as never);
    const created = events.filter((e) => e.type === "agent.session.checkpoint.created");
    const turnId = events.find((e) => e.type === "agent.session.turn.completed")!.turn_id!;
    expect(created.map((e) => e.checkpoint!.kind)).toEqual(["external", "turn"]);
    expect(created[1]).toMatchObject({
      turn_id: turnId,
      checkpoint: { turn_id: turnId, stats: { files: 2 } },
    });

    const page = (await client.get(`/agents/sessions/${s.id}/checkpoints`, { headers: OFFICIAL })) as {
      object: string;
      data: Checkpoint[];
      has_more: boolean;
      first_id: string;
    };
    expect(page).toMatchObject({ object: "list", has_more: false });
    expect(page.data[0]!.kind).toBe("turn"); // newest first
    const one = (await client.get(`/agents/sessions/${s.id}/checkpoints`, {
      headers: OFFICIAL,
      query: { limit: 1, order: "asc" },
    })) as { data: Checkpoint[]; has_more: boolean; last_id: string };
    expect(one.has_more).toBe(true);
    const next = (await client.get(`/agents/sessions/${s.id}/checkpoints`, {
      headers: OFFICIAL,
      query: { limit: 10, order: "asc", after: one.last_id },
    })) as { data: Checkpoint[] };
    expect([...one.data, ...next.data].map((c) => c.id)).toEqual(page.data.map((c) => c.id).reverse());

    const d = (await client.get(`/agents/sessions/${s.id}/turns/${turnId}/diff`, {
      headers: OFFICIAL,
    })) as Diff;
    expect(d.files.map((c) => [c.path, c.status])).toEqual([
      ["keep.txt", "deleted"],
      ["made.txt", "added"],
    ]);
    const r = (await client.post(`/agents/sessions/${s.id}/checkpoints/${d.from_id}/restore`, {
      headers: OFFICIAL,
      body: { conversation: "revert" },
    })) as Restore;
    expect(r.conversation_turns).toEqual({ kept: 0, dropped: 1 });
    expect(snapshot(ws)).toEqual({ "keep.txt": `file:${sha("keep\n")}` });
    const from = f.mock.requests().length;
    const again = await client.beta.agents.sessions.stream(s.id, { input: "Reply with exactly: fresh" });
    await again.finalResult();
    expect(userTexts(from)).toEqual([["Reply with exactly: fresh"]]);

    const fork = (await client.post(`/agents/sessions/${s.id}/turns/${turnId}/fork`, {
      headers: OFFICIAL,
      body: {},
    })) as { id: string; object: string; forked_from: { conversation_turns: number } };
    expect(fork.object).toBe("agent.session");
    // That turn's conversation was reverted away in the source session: the backup the restore kept has it.
    expect(fork.forked_from.conversation_turns).toBe(1);
    const forked = await client.beta.agents.sessions.retrieve(fork.id);
    expect(forked.id).toBe(fork.id);
    // Its history is that turn (the conversation it was forked with): its items and the turn, as the source has
    // them (the source's own conversation was reverted since; its history keeps the turn).
    const all = async <T>(list: AsyncIterable<T>) => {
      const out: T[] = [];
      for await (const x of list) out.push(x);
      return out;
    };
    const sourceTurnItems = await all(
      client.beta.agents.sessions.turns.items.list(turnId, { session_id: s.id, order: "asc" }),
    );
    expect(sourceTurnItems.length).toBeGreaterThan(1);
    expect(await all(client.beta.agents.sessions.items.list(fork.id, { order: "asc", limit: 1 }))).toEqual(
      sourceTurnItems,
    );
    const forkTurns = await all(client.beta.agents.sessions.turns.list(fork.id));
    expect(forkTurns.map((t) => [t.id, t.status])).toEqual([[turnId, "completed"]]);
    expect(await client.beta.agents.sessions.turns.retrieve(turnId, { session_id: fork.id })).toEqual({
      ...(await client.beta.agents.sessions.turns.retrieve(turnId, { session_id: s.id })),
      session_id: fork.id,
      agent_id: forked.agent.id,
    });
    expect(snapshot(await f.workspaceOf(fork.id))).toEqual({ "made.txt": `file:${sha("new\n")}` });
    const before = f.mock.requests().length;
    await (
      await client.beta.agents.sessions.stream(fork.id, { input: "Reply with exactly: branch" })
    ).finalResult();
    expect(userTexts(before)).toEqual([
      [shell("printf 'new\\n' > made.txt && rm keep.txt", "official"), "Reply with exactly: branch"],
    ]);
    // Then its own turn's items, after the forked ones (newest first by default).
    const afterBranch = await all(client.beta.agents.sessions.items.list(fork.id, { order: "asc" }));
    expect(afterBranch.slice(0, sourceTurnItems.length)).toEqual(sourceTurnItems);
    const own = afterBranch.slice(sourceTurnItems.length);
    expect(own.length).toBeGreaterThan(0);
    expect(new Set(own.map((i) => i.turn_id)).size).toBe(1);
    expect(own[0]!.turn_id).not.toBe(turnId);
    expect((await all(client.beta.agents.sessions.items.list(fork.id))).map((i) => i.id)).toEqual(
      afterBranch.map((i) => i.id).reverse(),
    );

    // Errors in the official shape.
    const missing = await rejection(
      client.get(`/agents/sessions/${s.id}/checkpoints/ckpt_${"1".repeat(40)}`, { headers: OFFICIAL }),
    );
    expectApiError(missing, NotFoundError, 404);
    const bad = await rejection(
      client.get(`/agents/sessions/${s.id}/checkpoints/bad`, { headers: OFFICIAL }),
    );
    const e = expectApiError(bad, APIError, 400);
    expect((e.error as { param: string }).param).toBe("checkpoint_id");
  });

  it("health shows the stores' disk usage and the time the turn hooks took", async () => {
    const h = await waitFor(
      async () => {
        const body = (
          await ok<{ checkpoints: { enabled: boolean; stores: number; disk_bytes: number } }>(
            "GET",
            "/health",
          )
        ).checkpoints;
        return body.disk_bytes > 0 ? body : undefined;
      },
      15_000,
      "disk usage",
    );
    if (!h) throw new Error("unreachable: waitFor returned nothing");
    expect(h).toMatchObject({
      enabled: true,
      error: null,
      watched: { trees: expect.any(Number), dirs: expect.any(Number) },
    });
    expect(h.stores).toBeGreaterThan(1);
    expect((h as unknown as { turn_hooks: { turns: number; ms: number } }).turn_hooks.turns).toBeGreaterThan(
      5,
    );
  });
});

describe("retention and cleanup", () => {
  let g: ServerFixture;
  beforeAll(async () => {
    g = await startServer({ args: ["--checkpoint-keep", "2", "--checkpoint-idle", "0"] });
  });
  afterAll(async () => {
    await g?.close();
  });

  it("keeps the newest checkpoints once idle; deleting the session removes its store", async () => {
    const s = await g.json<{ id: string }>("POST", "/v1/agents/sessions", { workspace_mode: "session" });
    const id = s.body.id;
    for (const n of [1, 2, 3, 4]) {
      const res = await g.request("POST", `/v1/agents/sessions/${id}/events`, {
        input: shell(`printf ${n} > f${n}.txt`, `w${n}`),
      });
      expect((await readSse(res)).at(-1)?.event).toBe("agent.session.turn.completed");
    }
    const list = async () =>
      (await g.json<{ data: Checkpoint[] }>("GET", `/v1/agents/sessions/${id}/checkpoints`)).body.data;
    // By default official streams do not carry the event (the template stream above did); the log has it.
    const client = sdk(g);
    const o = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: { type: "none" },
    });
    await client.get(`/agents/sessions/${o.id}/checkpoints`, { headers: OFFICIAL });
    const st = await client.beta.agents.sessions.stream(o.id, { input: shell("printf o > o.txt", "o") });
    const types: string[] = [];
    for await (const e of st) types.push(e.type);
    expect(types).toContain("agent.session.turn.completed");
    expect(types).not.toContain("agent.session.checkpoint.created");
    const tpl = await g.request("GET", `/v1/agents/sessions/${o.id}/events`, undefined, {
      "Last-Event-ID": "0",
    });
    const replayed = await readSse(tpl);
    expect(replayed.map((e) => e.event)).toContain("agent.session.checkpoint.created");

    const kept = await waitFor(
      async () => {
        const l = await list();
        return l.length === 2 ? l : undefined;
      },
      15_000,
      "retention",
    );
    expect(kept?.map((c) => c.kind)).toEqual(["turn", "turn"]);
    const store = join(g.config.checkpoints.dir, id);
    expect(existsSync(store)).toBe(true);
    expect((await g.json("DELETE", `/v1/agents/sessions/${id}`)).status).toBe(200);
    await waitFor(() => !existsSync(store), 15_000, "the store to go");
  });
});

describe("checkpoints off", () => {
  it("--checkpoints off: no store, and a clear 409", async () => {
    const h = await startServer({ args: ["--checkpoints", "off"] });
    try {
      const s = await h.json<{ id: string }>("POST", "/v1/agents/sessions", { workspace_mode: "session" });
      const res = await h.request("POST", `/v1/agents/sessions/${s.body.id}/events`, {
        input: shell("printf x > x.txt", "x"),
      });
      const frames = await readSse(res);
      expect(frames.at(-1)?.event).toBe("agent.session.turn.completed");
      expect(frames.some((e) => e.event === "agent.session.checkpoint.created")).toBe(false);
      const list = await h.json("GET", `/v1/agents/sessions/${s.body.id}/checkpoints`);
      expect(list).toMatchObject({ status: 409, body: { type: "ConflictError" } });
      expect(existsSync(h.config.checkpoints.dir)).toBe(false);
    } finally {
      await h.close();
    }
  });
});

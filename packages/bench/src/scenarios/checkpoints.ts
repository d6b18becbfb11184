/**
 * Scenario 13: workspace checkpoints. What checkpoints add to a turn, with 1k, 10k and 50k files in the session's
 * workspace, side by side with a trivial turn of a server that has them off (the reference, measured in the same
 * run): the checkpoint work of each turn as the server timed it (its turn hooks: the scan before the turn, the
 * checkpoint after it, the event; `GET /health` → checkpoints.turn_hooks, read after every turn), the turn's
 * latency, the first checkpoint of the tree (the turn that first sees it), and the store's growth per turn that
 * changes files (loose objects), then its size once the idle store was repacked.
 */
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Context, type Scenario, TRIVIAL_PROMPT, templateTurn } from "../context.js";
import { sleep } from "../proc.js";
import { type ServerProcess, startServer } from "../server.js";
import { median, type Row, ratio, summarize, type Target } from "../stats.js";

const SIZES = [1_000, 10_000, 50_000];
/** Bytes per generated file (the research's trees: 1k files ≈ 4 MB). */
const FILE_BYTES = 4096;
/** The idle delay of the measured server's stores: long enough that no turn sequence ends it. */
const IDLE_SECONDS = 2;

interface HookTotals {
  turns: number;
  ms: number;
}

async function hookTotals(server: ServerProcess): Promise<HookTotals> {
  const h = await server.client.expect<{ checkpoints: { turn_hooks: HookTotals } }>(200, "GET", "/health");
  return h.checkpoints.turn_hooks;
}

/** A template session with a directory of its own; waits for its (empty) baseline. */
async function ownSession(server: ServerProcess): Promise<string> {
  const s = await server.client.expect<{ id: string }>(200, "POST", "/v1/agents/sessions", {
    agent: { model: "mock-model" },
    workspace_mode: "session",
  });
  const r = await server.client.request("GET", `/v1/agents/sessions/${s.id}/checkpoints`);
  if (r.status !== 200 && r.status !== 409) throw new Error(`checkpoint list: ${r.status}`);
  return s.id;
}

/** `n` files of FILE_BYTES in 100-file directories, 5 levels of 20 per directory. */
function populate(dir: string, n: number): void {
  const body = Buffer.alloc(FILE_BYTES);
  for (let i = 0; i < n; i++) {
    const d = join(dir, `d${Math.floor(i / 100)}`, `s${Math.floor(i / 20) % 5}`);
    if (i % 20 === 0) mkdirSync(d, { recursive: true });
    body.write(`file ${i}\n`, 0);
    writeFileSync(join(d, `f${i}.txt`), body);
  }
}

function du(path: string): number {
  let total = 0;
  const walk = (p: string) => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) return;
    total += st.blocks * 512;
    if (st.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e));
  };
  walk(path);
  return total;
}

/** A turn whose shell command modifies 5 files, adds 3 and deletes the 3 the previous one added (8-11 files). */
function changingPrompt(i: number): string {
  const edits = [0, 1, 2, 3, 4].map((k) => `printf 'edit ${i}\\n' >> d${k}/s0/f${k * 100}.txt`);
  const adds = ["a", "b", "c"].map((x) => `printf '${i}${x}\\n' > new/${i}-${x}.txt`);
  // (`rm -f` would be refused by the engine's safety check: nothing would run.)
  const drops = i > 0 ? [`rm new/${i - 1}-a.txt new/${i - 1}-b.txt new/${i - 1}-c.txt`] : [];
  const cmd = ["mkdir -p new", ...edits, ...adds, ...drops].join(" && ");
  return `Run this exact shell command and wait for it to finish: ${cmd}. Then reply with exactly: edited ${i}`;
}

/** Runs `prompts` as template turns; per turn, the latency and the checkpoint work the server timed. */
async function measure(
  server: ServerProcess,
  sessionId: string,
  prompts: string[],
): Promise<{ latency: number[]; work: number[] }> {
  const latency: number[] = [];
  const work: number[] = [];
  for (const p of prompts) {
    const before = await hookTotals(server);
    latency.push(await templateTurn(server, sessionId, p));
    const after = await hookTotals(server);
    if (after.turns !== before.turns + 1)
      throw new Error(`expected one turn's hooks, got ${after.turns - before.turns}`);
    work.push(after.ms - before.ms);
  }
  return { latency, work };
}

const row = (
  metric: string,
  unit: string,
  samples: number[],
  ref?: { median: number; name: string },
): Row => {
  const s = summarize(samples);
  return {
    metric,
    unit,
    n: s.n,
    median: s.median,
    p95: s.p95,
    ratio: ref ? ratio(s.median, ref.median) : null,
    vs: ref?.name ?? null,
  };
};

export const checkpoints: Scenario = {
  id: "13",
  title: "Workspace checkpoints: cost per turn at 1k / 10k / 50k files, store growth",
  async run(ctx: Context) {
    const n = ctx.quick ? 5 : 15;
    const warm = 2;
    const { dir } = ctx.cleanup.tempDir("checkpoints");
    const [on, off] = await Promise.all([
      startServer(ctx.cleanup, {
        mockUrl: ctx.mock.url,
        dataDir: join(dir, "on"),
        args: ["--checkpoint-idle", String(IDLE_SECONDS), "--checkpoint-keep", "0"],
      }),
      startServer(ctx.cleanup, {
        mockUrl: ctx.mock.url,
        dataDir: join(dir, "off"),
        args: ["--checkpoints", "off"],
      }),
    ]);
    const rows: Row[] = [];
    const notes: string[] = [];
    const targets: Target[] = [];
    const data: Record<string, unknown> = {};
    try {
      // The reference: a trivial turn without checkpoints.
      const refSession = await ownSession(off);
      for (let i = 0; i < warm; i++) await templateTurn(off, refSession, TRIVIAL_PROMPT);
      const refSamples: number[] = [];
      for (let i = 0; i < n; i++) refSamples.push(await templateTurn(off, refSession, TRIVIAL_PROMPT));
      const ref = { median: median(refSamples), name: "trivial turn, checkpoints off" };
      rows.push(row("trivial turn, checkpoints off", "ms", refSamples));

      for (const size of SIZES) {
        const label = size >= 1000 ? `${size / 1000}k files` : `${size} files`;
        ctx.log(`  [13] ${label}: writing the tree…`);
        const sid = await ownSession(on);
        const ws = join(dir, "on", "workspace", sid);
        const store = join(dir, "on", "checkpoints", sid);
        populate(ws, size);
        const treeBytes = du(ws);
        // The first turn that sees the tree checkpoints all of it (the workspace changed outside the agent).
        const first = await measure(on, sid, [TRIVIAL_PROMPT]);
        rows.push({
          metric: `first checkpoint of the tree, ${label}`,
          unit: "ms",
          n: 1,
          median: first.work[0] ?? null,
          note: `tree ${(treeBytes / 1048576).toFixed(0)} MiB`,
        });
        // A freshly written index holds "racily clean" entries (files written in its second), which git reads again
        // on every scan until the store refreshes the index (just after that second): let it settle.
        await sleep(1200);
        await measure(
          on,
          sid,
          Array.from({ length: warm }, () => TRIVIAL_PROMPT),
        );
        const trivial = await measure(
          on,
          sid,
          Array.from({ length: n }, () => TRIVIAL_PROMPT),
        );
        rows.push(row(`trivial turn, ${label}`, "ms", trivial.latency, ref));
        rows.push(row(`  checkpoint work per trivial turn, ${label}`, "ms", trivial.work, ref));
        const storeBefore = du(store);
        const changing = await measure(
          on,
          sid,
          Array.from({ length: n }, (_, i) => changingPrompt(i)),
        );
        const storeAfter = du(store);
        // Every changing turn really changed files (a refused command would make a cheap, meaningless sample).
        const made = await on.client.expect<{ data: Array<{ kind: string }> }>(
          200,
          "GET",
          `/v1/agents/sessions/${sid}/checkpoints`,
        );
        const turnCheckpoints = made.data.filter((c) => c.kind === "turn").length;
        if (turnCheckpoints !== n)
          throw new Error(`expected ${n} turn checkpoints, found ${turnCheckpoints}`);
        rows.push(row(`turn changing 8-11 files, ${label}`, "ms", changing.latency, ref));
        rows.push(row(`  checkpoint work per changing turn, ${label}`, "ms", changing.work, ref));
        rows.push({
          metric: `  store growth per changing turn, ${label}`,
          unit: "KiB",
          n,
          median: (storeAfter - storeBefore) / n / 1024,
          note: "loose objects, before the idle repack",
        });
        // Idle: the store is pruned (nothing to drop here) and repacked.
        await sleep((IDLE_SECONDS + 1.5) * 1000);
        const packed = du(store);
        rows.push({
          metric: `  store after the idle repack, ${label}`,
          unit: "MiB",
          n: 1,
          median: packed / 1048576,
          note: `${(storeAfter / 1048576).toFixed(1)} MiB before; tree ${(treeBytes / 1048576).toFixed(0)} MiB`,
        });
        data[label] = { trivial, changing, first: first.work[0], treeBytes, storeBefore, storeAfter, packed };
        if (size === 1_000) {
          targets.push({
            name: "checkpoint work per trivial turn at 1k files ≤ 0.10 × a trivial turn",
            value: ratio(median(trivial.work), ref.median),
            op: "<=",
            threshold: 0.1,
            unit: "×",
            detail: `${median(trivial.work).toFixed(1)} ms vs ${ref.median.toFixed(0)} ms (changing turn: ${median(changing.work).toFixed(1)} ms)`,
          });
        }
        if (size === 50_000) {
          for (const [what, samples] of [
            ["a trivial turn", trivial.work],
            ["a turn changing 8-11 files", changing.work],
          ] as const) {
            targets.push({
              name: `checkpoint work per turn at 50k files ≤ 150 ms (${what})`,
              value: median(samples),
              op: "<=",
              threshold: 150,
              unit: "ms",
            });
          }
        }
      }
      notes.push(
        "checkpoint work = the server's turn hooks (scan before the turn, checkpoint after it, the event), read from " +
          "GET /health checkpoints.turn_hooks after each turn; ratios against the checkpoints-off trivial turn",
        "a trivial turn (no tool call) costs one scan, before it: a turn without a command, patch or tool call " +
          "cannot have changed a file, so no scan follows it; a changing turn is scanned after, its files hashed " +
          "and committed",
        "the first turn after the tree was written checkpoints all of it; the store then settles (its index is " +
          "refreshed once the clock has left the second it was written in) before the steady-state turns",
      );
    } finally {
      await Promise.all([on.stop(), off.stop()]);
    }
    return { id: this.id, title: this.title, rows, targets, notes, data };
  },
};

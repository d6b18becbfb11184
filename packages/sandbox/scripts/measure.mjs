// Measures create -> first command result (a raw process/start of `true` through the executor bridge), cold and from
// the warm pool, p50/p99, and the memory of idle sandboxes. Needs root, podman and the image; run after `npm run build`:
//   node packages/sandbox/scripts/measure.mjs [runs=20] [idle=5]
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { ContainerBackend, ExecutorClient, limitsForSize } from "../dist/index.js";

const runs = Number(process.argv[2] ?? 20);
const idle = Number(process.argv[3] ?? 5);
const MiB = 1024 ** 2;
const limits = limitsForSize("small", { overrides: { diskBytes: 1024 * MiB } });
const root = mkdtempSync("/var/tmp/sbx-measure-");
const prefix = `m${process.pid.toString(36)}-`;

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const fmt = (ms) => `${(ms / 1000).toFixed(3)} s`;

async function once(backend, id) {
  const t0 = performance.now();
  const s = await backend.create({ id, limits, network: { mode: "none" } });
  const tCreated = performance.now();
  const c = await ExecutorClient.open(s.executor.url, s.executor.token);
  const r = await c.run("true");
  const t1 = performance.now();
  if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`);
  c.close();
  return { sandbox: s, total: t1 - t0, create: tCreated - t0 };
}

const backend = await ContainerBackend.open({
  rootDir: root,
  namePrefix: prefix,
  warm: [{ limits, count: 1 }],
});
const cold = [];
const warm = [];
try {
  for (let i = 0; i < runs; i++) {
    // cold: a spec the pool does not hold (other pids limit)
    const t0 = performance.now();
    const s = await backend.create({
      id: `cold-${i}`,
      limits: { ...limits, pids: limits.pids + 1 },
      network: { mode: "none" },
    });
    const c = await ExecutorClient.open(s.executor.url, s.executor.token);
    await c.run("true");
    cold.push(performance.now() - t0);
    c.close();
    await s.destroy();
    await backend.waitWarm();
    const w = await once(backend, `warm-${i}`);
    if (!w.sandbox.fromPool) throw new Error("warm run was not served by the pool");
    warm.push(w.total);
    await w.sandbox.destroy();
  }
  // Idle sandboxes: memory of each container's cgroup after its first command (exec-server connection closed).
  await backend.waitWarm();
  const boxes = [];
  for (let i = 0; i < idle; i++) {
    const s = await backend.create({
      id: `idle-${i}`,
      limits: { ...limits, pids: limits.pids + 1 },
      network: { mode: "none" },
    });
    const c = await ExecutorClient.open(s.executor.url, s.executor.token);
    await c.run("true");
    c.close();
    boxes.push(s);
  }
  await new Promise((r) => setTimeout(r, 3000));
  const mem = [];
  for (const s of boxes) mem.push((await s.health()).memoryCurrentBytes ?? 0);
  const conmon = execFileSync("ps", ["-C", "conmon", "-o", "rss="], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean)
    .map(Number);
  console.log(
    JSON.stringify(
      {
        runs,
        coldMs: { p50: pct(cold, 50), p99: pct(cold, 99), min: Math.min(...cold), max: Math.max(...cold) },
        warmMs: { p50: pct(warm, 50), p99: pct(warm, 99), min: Math.min(...warm), max: Math.max(...warm) },
        idleContainerMemoryBytes: { each: mem, p50: pct(mem, 50) },
        conmonRssKiB: { count: conmon.length, p50: pct(conmon, 50) },
        stats: backend.stats(),
      },
      null,
      2,
    ),
  );
  console.log(
    `cold create -> first command: p50 ${fmt(pct(cold, 50))}, p99 ${fmt(pct(cold, 99))} (${runs} runs)`,
  );
  console.log(
    `warm create -> first command: p50 ${fmt(pct(warm, 50))}, p99 ${fmt(pct(warm, 99))} (${runs} runs)`,
  );
  console.log(
    `idle sandbox: container cgroup memory p50 ${(pct(mem, 50) / MiB).toFixed(1)} MiB (${idle} sandboxes)`,
  );
  for (const s of boxes) await s.destroy();
} finally {
  for (const r of await backend.list()) await (await backend.adopt(r.id))?.destroy();
  await backend.close();
  rmSync(root, { recursive: true, force: true });
}

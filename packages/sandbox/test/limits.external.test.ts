// Limits inside a container sandbox: memory (an OOM-killed command, seen in the cgroup counters), pids (a fork storm
// stops at the limit; the sandbox is replaced and works again), disk (ENOSPC past the workspace size).
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContainerBackend, limitsForSize } from "../src/index.js";
import {
  containersWithPrefix,
  ExecClient,
  ensureImage,
  GiB,
  MiB,
  mountsUnder,
  runPrefix,
  tempRoot,
  waitFor,
} from "./helpers.js";

const prefix = runPrefix("lim");
const root = tempRoot("lim");
let backend: ContainerBackend;
const clients: ExecClient[] = [];

beforeAll(async () => {
  await ensureImage();
  backend = await ContainerBackend.open({ rootDir: root, namePrefix: prefix, watchIntervalMs: 200 });
}, 300_000);

afterAll(async () => {
  for (const c of clients) c.close();
  for (const r of (await backend?.list()) ?? []) await (await backend.adopt(r.id!))?.destroy();
  await backend?.close();
  expect(containersWithPrefix(prefix)).toEqual([]);
  expect(mountsUnder(root)).toEqual([]);
  rmSync(root, { recursive: true, force: true });
}, 120_000);

describe("limits", () => {
  it("a 2 GiB allocation is OOM-killed on small (1 GiB); the oom event and counter fire, the sandbox lives on", async () => {
    const limits = limitsForSize("small", { overrides: { diskBytes: 64 * MiB } });
    expect(limits.memoryBytes).toBe(GiB);
    const s = await backend.create({ id: "sess-oom", limits, network: { mode: "none" } });
    const ooms: number[] = [];
    s.on("oom", (e) => ooms.push(e.total));
    const c = await ExecClient.open(s.executor.url, s.executor.token);
    clients.push(c);
    const r = await c.run("python3 -c 'b = bytearray(2 * 1024 ** 3); print(len(b))'");
    expect(r.exitCode).toBe(137);
    expect(r.stdout).not.toContain("2147483648");
    await waitFor("the oom event", () => ooms.length > 0);
    const h = await s.health();
    expect(h.oomKills).toBeGreaterThanOrEqual(1);
    expect(h.memoryMaxBytes).toBe(GiB);
    expect(h.running).toBe(true);
    expect((await c.run("echo still-here")).stdout).toBe("still-here\n");
  });

  it("a fork storm stops at the pids limit; the sandbox is replaced and works again", async () => {
    const limits = limitsForSize("small", { overrides: { pids: 64, diskBytes: 64 * MiB } });
    const s = await backend.create({ id: "sess-fork", limits, network: { mode: "none" } });
    const hits: number[] = [];
    s.on("pids-exhausted", (e) => hits.push(e.hits));
    const c = await ExecClient.open(s.executor.url, s.executor.token);
    clients.push(c);
    await c.run("echo kept > /workspace/kept.txt");
    // The storm runs in the background of its command, which itself returns.
    const r = await c.run("(f() { f & f & }; f) >/dev/null 2>&1 & echo storm-started");
    expect(r.stdout).toContain("storm-started");
    await waitFor("the pids-exhausted event", () => hits.length > 0, 60_000);
    const h = await s.health();
    expect(h.pidsMax).toBe(64);
    expect(h.pidsLimitHits).toBeGreaterThan(0);
    await s.replace();
    const c2 = await ExecClient.open(s.executor.url, s.executor.token);
    clients.push(c2);
    const after = await c2.run("cat /workspace/kept.txt; ps -e --no-headers | wc -l");
    expect(after.stdout.split("\n")[0]).toBe("kept");
    expect(Number(after.stdout.split("\n")[1])).toBeLessThan(10);
    expect((await s.health()).pidsCurrent).toBeLessThan(20);
  });

  it("writing past the disk limit fails with ENOSPC; /tmp has its own limit", async () => {
    const limits = limitsForSize("small", { overrides: { diskBytes: 64 * MiB, tmpBytes: 16 * MiB } });
    const s = await backend.create({ id: "sess-disk", limits, network: { mode: "none" } });
    const c = await ExecClient.open(s.executor.url, s.executor.token);
    clients.push(c);
    const r = await c.run("dd if=/dev/zero of=/workspace/big bs=1M count=100 2>&1; echo rc=$?");
    expect(r.stdout).toMatch(/No space left on device/);
    expect(r.stdout).toMatch(/rc=1/);
    const t = await c.run("dd if=/dev/zero of=/tmp/big bs=1M count=32 2>&1; echo rc=$?");
    expect(t.stdout).toMatch(/No space left on device/);
    const h = await s.health();
    expect(h.diskMaxBytes).toBeLessThanOrEqual(64 * MiB);
    expect(h.diskUsedBytes).toBeGreaterThan(40 * MiB);
    // Space freed is usable again.
    expect(
      (await c.run("rm /workspace/big && echo ok > /workspace/small && cat /workspace/small")).stdout,
    ).toBe("ok\n");
  });
});

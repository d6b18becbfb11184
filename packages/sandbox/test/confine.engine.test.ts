// TreeConfinement against a cgroup file tree of its own (a directory laid out like /sys/fs/cgroup, v1 and v2) and a
// real process for the rlimits: the groups and limit files it writes, the process it moves, what it reports when a
// controller is not delegated, the stale groups it sweeps and the ones it removes on close. (The kernel's side — the
// limits holding for real commands — is tested from inside turns: packages/server/test/platform/engine/
// local-limits.engine.test.ts.)
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TreeConfinement } from "../src/confine.js";

const MiB = 1024 * 1024;
const LIMITS = { memoryBytes: 64 * MiB, cpus: 1.5, pids: 50, dataBytes: 96 * MiB, fileBytes: 8 * MiB };
const dirs: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tree(procSelf: string): { root: string; procSelfCgroup: string } {
  const root = mkdtempSync(join(tmpdir(), "cas-cgroup-"));
  dirs.push(root);
  const procSelfCgroup = join(root, "self-cgroup");
  writeFileSync(procSelfCgroup, procSelf);
  return { root, procSelfCgroup };
}

const read = (path: string) => readFileSync(path, "utf8");

function sleeper(): number {
  const c = spawn("sleep", ["30"], { stdio: "ignore" });
  children.push(c);
  return c.pid!;
}

describe("TreeConfinement", () => {
  it("v1: a group per controller under this process's own, with the limits, the process moved and its rlimits", async () => {
    const t = tree("12:pids:/\n4:memory:/jail/me\n3:cpu,cpuacct:/a\n0::/\n");
    for (const c of ["pids", "memory/jail/me", "cpu/a"]) mkdirSync(join(t.root, c), { recursive: true });
    const c = await TreeConfinement.open("svc-1", LIMITS, { ...t, version: "hybrid" });
    expect(c.report()).toMatchObject({
      cgroup: "hybrid",
      controllers: ["memory", "cpu", "pids"],
      problems: [],
    });
    const pid = sleeper();
    expect(await c.confine(pid, "engine-0")).toEqual([]);
    const mem = join(t.root, "memory/jail/me/svc-1/engine-0");
    expect(read(join(mem, "memory.limit_in_bytes"))).toBe(String(64 * MiB));
    expect(read(join(mem, "cgroup.procs"))).toBe(String(pid));
    expect(read(join(t.root, "cpu/a/svc-1/engine-0/cpu.cfs_quota_us"))).toBe("150000");
    expect(read(join(t.root, "cpu/a/svc-1/engine-0/cpu.cfs_period_us"))).toBe("100000");
    expect(read(join(t.root, "pids/svc-1/engine-0/pids.max"))).toBe("50");
    const limits = read(`/proc/${pid}/limits`);
    expect(limits).toMatch(new RegExp(`^Max data size\\s+${96 * MiB}\\s+${96 * MiB}`, "m"));
    expect(limits).toMatch(new RegExp(`^Max file size\\s+${8 * MiB}\\s+${8 * MiB}`, "m"));
    expect(limits).toMatch(/^Max core file size\s+0\s+0/m);
    // The counters of the group are read from the same directories.
    writeFileSync(join(mem, "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    expect(c.reader("engine-0")?.oomKillsNow()).toBe(3);
    expect(c.reader("engine-9")).toBeNull();
  });

  it("v2: one group for all controllers, enabled below the service's group; an undelegated one is reported", async () => {
    const t = tree("0::/user.slice/me\n");
    const own = join(t.root, "user.slice/me");
    mkdirSync(own, { recursive: true });
    writeFileSync(join(own, "cgroup.subtree_control"), "memory pids");
    const c = await TreeConfinement.open("svc-2", LIMITS, { ...t, version: "v2" });
    const report = c.report();
    expect(report.controllers).toEqual(["memory", "pids"]);
    expect(report.problems).toEqual([expect.stringMatching(/^cpu: not delegated/)]);
    expect(read(join(own, "svc-2/cgroup.subtree_control"))).toBe("+memory +pids");
    const pid = sleeper();
    expect(await c.confine(pid, "engine-1")).toEqual([]);
    const group = join(own, "svc-2/engine-1");
    expect(read(join(group, "memory.max"))).toBe(String(64 * MiB));
    expect(read(join(group, "pids.max"))).toBe("50");
    expect(existsSync(join(group, "cpu.max"))).toBe(false);
    expect(read(join(group, "cgroup.procs"))).toBe(String(pid));
  });

  it("nothing writable: every controller is reported, confine applies the rlimits alone", async () => {
    const t = tree("4:memory:/x\n");
    // (no controller directories at all: nothing can be made)
    for (const ctl of ["memory", "cpu", "pids"]) writeFileSync(join(t.root, ctl), "not a directory");
    const c = await TreeConfinement.open("svc-3", LIMITS, { ...t, version: "v1" });
    expect(c.report().cgroup).toBeNull();
    expect(c.report().problems).toHaveLength(3);
    const pid = sleeper();
    expect(await c.confine(pid, "engine-0")).toEqual([]);
    expect(read(`/proc/${pid}/limits`)).toMatch(/^Max core file size\s+0\s+0/m);
  });

  it("a group without a memory controller has no OOM count: never another group's", async () => {
    const t = tree("8:pids:/\n4:memory:/blocked\n");
    mkdirSync(join(t.root, "pids"), { recursive: true });
    writeFileSync(join(t.root, "cpu"), "not a directory");
    // (no memory group can be made under /blocked; the memory root's own counter is not the group's)
    mkdirSync(join(t.root, "memory"));
    writeFileSync(join(t.root, "memory/blocked"), "not a directory");
    writeFileSync(join(t.root, "memory/memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 7\n");
    const c = await TreeConfinement.open("svc-5", LIMITS, { ...t, version: "v1" });
    expect(c.report().controllers).toEqual(["pids"]);
    await c.confine(sleeper(), "engine-0");
    writeFileSync(join(t.root, "pids/svc-5/engine-0/pids.events"), "max 4\n");
    writeFileSync(join(t.root, "pids/svc-5/engine-0/pids.current"), "3\n");
    const reader = c.reader("engine-0")!;
    expect(reader.oomKillsNow()).toBeNull();
    expect(await reader.read()).toMatchObject({
      memoryCurrent: null,
      oomKills: 0,
      pidsCurrent: 3,
      pidsLimitHits: 4,
    });
  });

  it("sweeps the empty groups an earlier process left, and removes its own on close", async () => {
    const t = tree("8:pids:/\n");
    mkdirSync(join(t.root, "pids/svc-dead/engine-0"), { recursive: true });
    mkdirSync(join(t.root, "pids/other"), { recursive: true });
    const c = await TreeConfinement.open("svc-4", LIMITS, {
      ...t,
      version: "v1",
      stale: (name) => name === "svc-dead",
    });
    expect(existsSync(join(t.root, "pids/svc-dead"))).toBe(false);
    expect(existsSync(join(t.root, "pids/other"))).toBe(true);
    await c.confine(sleeper(), "engine-0");
    // (a real cgroup directory holds only kernel files, which rmdir ignores; here they are ours: emptied first)
    for (const f of ["pids.max", "cgroup.procs"]) rmSync(join(t.root, "pids/svc-4/engine-0", f));
    c.close();
    expect(existsSync(join(t.root, "pids/svc-4"))).toBe(false);
  });
});

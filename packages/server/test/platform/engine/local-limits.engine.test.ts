// The local backend's limits, from inside real turns (the real engine, the scripted model): the engine and its
// commands are in a process group of their own on this host (cgroup memory, CPU, pids) and every command has the
// rlimits of the default size (data segment, file size, no core dumps). A 2 GiB allocation fails, a process over the
// group's memory is killed (and its item says so), a fork storm stops at the pids limit, a file stops at the disk
// size, a command cannot leave its group; the service and the session go on.
import { existsSync, mkdirSync, readFileSync, rmdirSync } from "node:fs";
import { join } from "node:path";
import type OpenAI from "openai";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalLimits } from "../../../src/platform/engine/local-limits.js";
import { commandTurn } from "../../support/environment-helpers.js";
import { type ServerFixture, startServer, waitFor } from "../../support/fixture.js";
import { sdk } from "../../support/openai-helpers.js";

const MiB = 1024 * 1024;
let f: ServerFixture;
let client: OpenAI;
let sessionId: string;

beforeAll(async () => {
  f = await startServer({
    args: [
      "--sandbox-size",
      "small",
      "--sandbox-max-memory",
      "512",
      "--sandbox-pids",
      "96",
      "--sandbox-disk",
      "64",
    ],
  });
  client = sdk(f);
  sessionId = (
    await client.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: { model: "mock-model" },
    })
  ).id;
}, 120_000);

afterAll(async () => {
  await f?.close();
});

/** A turn of the session running `cmd`: what its command printed. */
const run = (cmd: string) => commandTurn(client, sessionId, cmd);

/** A line of /proc/self/limits: the soft and hard values. */
const limitOf = (output: string, name: string) =>
  new RegExp(`^Max ${name}\\s+(\\S+)\\s+(\\S+)`, "m").exec(output)?.slice(1, 3);

describe("limits on the local backend", () => {
  it("the engine's commands are in its group, with the size's rlimits", async () => {
    const output = await run("cat /proc/self/cgroup; cat /proc/self/limits");
    const group = `codex-agent-api-${process.pid}-\\d+/engine-0`;
    expect(output).toMatch(new RegExp(`^\\d+:memory:\\S*/${group}$`, "m"));
    expect(output).toMatch(new RegExp(`^\\d+:pids:\\S*/${group}$`, "m"));
    expect(output).toMatch(new RegExp(`^\\d+:cpu(,cpuacct)?:\\S*/${group}$`, "m"));
    // (the size's memory and the engine's allowance: the engine is under it too)
    expect(limitOf(output, "data size")).toEqual([String(1536 * MiB), String(1536 * MiB)]);
    expect(limitOf(output, "file size")).toEqual([String(64 * MiB), String(64 * MiB)]);
    expect(limitOf(output, "core file size")).toEqual(["0", "0"]);
  });

  it("a 2 GiB allocation fails; the session goes on", async () => {
    const output = await run(`python3 -c 'x = bytearray(2 * 1024 ** 3)'; echo "rc=$?"; echo after`);
    expect(output).toContain("MemoryError");
    expect(output).toMatch(/rc=1\nafter/);
  });

  it("a process over the group's memory is killed, and its item says so", async () => {
    // Together (with the engine) over the group's 512 MiB: the kernel kills the largest process of the group, the
    // first one (the engine is smaller).
    const output = await run(
      `python3 -c 'import time; x = bytearray(250 * 1024 ** 2); time.sleep(3)' & sleep 1; python3 -c 'x = bytearray(250 * 1024 ** 2)'; b=$?; wait $!; echo "rcs=$?,$b"`,
    );
    expect(output).toMatch(/rcs=137,0/);
    expect(output).toMatch(
      /\[a process of this command was killed: out of memory \(its engine group's limit is 512 MiB\)\]$/,
    );
    // The command itself killed: exit code 137, said so.
    expect(await run(`exec python3 -c 'x = bytearray(600 * 1024 ** 2)'`)).toMatch(
      /\[command killed: out of memory \(its engine group's limit is 512 MiB\), exit code 137\]$/,
    );
    expect(await run("echo still-here")).toBe("still-here\n");
  });

  it("a fork storm stops at the pids limit; the service and the session go on", async () => {
    // (python: bash retries a refused fork for seconds, each time)
    const storm = [
      "import os, time",
      "pids = []",
      "exec('try:\\n while len(pids) < 200:\\n  p = os.fork()\\n  if p == 0: time.sleep(20); os._exit(0)\\n  pids.append(p)\\nexcept OSError as e: print(\\'refused after\\', len(pids), e.strerror)')",
      "[os.kill(p, 9) for p in pids]",
      "print('cleaned')",
    ].join("; ");
    const output = await run(`python3 -c "${storm}"`);
    const refused = /refused after (\d+) Resource temporarily unavailable/.exec(output);
    expect(refused, output).not.toBeNull();
    expect(Number(refused![1])).toBeLessThan(96);
    expect(output).toContain("cleaned");
    expect((await f.request("GET", "/health")).status).toBe(200);
    expect(await run("echo still-here")).toBe("still-here\n");
  });

  it("/metrics shows the group's limits and the limits commands ran into", async () => {
    const metric = async (line: RegExp) => line.exec(await (await f.request("GET", "/metrics")).text())?.[1];
    // (the groups' counters are read each second)
    await waitFor(
      async () =>
        Number(await metric(/^codex_agent_api_sandbox_limit_hits_total\{limit="memory"\} (\S+)$/m)) >= 1 &&
        Number(await metric(/^codex_agent_api_sandbox_limit_hits_total\{limit="pids"\} (\S+)$/m)) >= 1,
      10_000,
      "the memory kills and refused forks in /metrics",
    );
    expect(
      Number(await metric(/^codex_agent_api_sandbox_default_limit\{resource="memory_bytes"\} (\S+)$/m)),
    ).toBe(512 * MiB);
    expect(Number(await metric(/^codex_agent_api_sandbox_default_limit\{resource="pids"\} (\S+)$/m))).toBe(
      96,
    );
  });

  it("a file stops at the workspace disk size", async () => {
    const output = await run(
      `head -c ${70 * MiB} /dev/zero > big.bin; echo "rc=$?"; stat -c %s big.bin; rm big.bin`,
    );
    expect(output).toMatch(/File size limit exceeded/);
    expect(output).toMatch(/rc=153/);
    expect(output).toContain(String(64 * MiB));
  });

  it("a command can neither leave its group nor raise its limits", async () => {
    const output = await run(
      [
        `echo $$ > /sys/fs/cgroup/memory/cgroup.procs && echo LEFT-GROUP || echo stayed`,
        `echo 0 > /sys/fs/cgroup/pids$(grep :pids: /proc/self/cgroup | cut -d: -f3)/pids.max && echo RAISED || echo kept`,
        `prlimit --pid $$ --data=unlimited && echo RAISED-RLIMIT || echo kept-rlimit`,
      ].join("; "),
    );
    expect(output).toMatch(/stayed\n/);
    expect(output).toMatch(/kept\n/);
    expect(output).toMatch(/kept-rlimit/);
    expect(output).not.toMatch(/LEFT-GROUP|RAISED/);
  });

  it("groups a killed service left are removed at the next start; nothing else is", async () => {
    const own = /^\d+:pids:(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1] ?? "/";
    const base = join("/sys/fs/cgroup/pids", own);
    let dead = 4_000_000;
    while (existsSync(`/proc/${dead}`)) dead--;
    const stale = join(base, `codex-agent-api-${dead}-1`);
    const other = join(base, `not-ours-${process.pid}`);
    mkdirSync(join(stale, "engine-0"), { recursive: true });
    mkdirSync(other);
    try {
      const limits = await LocalLimits.open({
        size: "small",
        maximums: {},
        defaults: {},
        logger: pino({ level: "silent" }),
      });
      limits.close();
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(other)).toBe(true);
    } finally {
      for (const d of [join(stale, "engine-0"), stale, other]) if (existsSync(d)) rmdirSync(d);
    }
  });
});

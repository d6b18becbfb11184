// The warm pool: pre-created sandboxes per (image, limits, network mode) claimed by create(), refilled in the
// background; idle sandboxes are stopped and resumed by their next executor message; stats() for /health.
import { chmodSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContainerBackend, limitsForSize } from "../src/index.js";
import {
  containersWithPrefix,
  ExecClient,
  ensureImage,
  MiB,
  mountsUnder,
  runPrefix,
  tempRoot,
  waitFor,
} from "./helpers.js";

const prefix = runPrefix("pool");
const root = tempRoot("pool");
const limits = limitsForSize("small", { overrides: { diskBytes: 64 * MiB, tmpBytes: 32 * MiB } });
let backend: ContainerBackend;
const clients: ExecClient[] = [];

beforeAll(async () => {
  await ensureImage();
  backend = await ContainerBackend.open({
    rootDir: root,
    namePrefix: prefix,
    warm: [{ limits, count: 1 }],
    idleStopMs: 1500,
    watchIntervalMs: 200,
  });
}, 300_000);

afterAll(async () => {
  for (const c of clients) c.close();
  for (const r of (await backend?.list()) ?? []) await (await backend.adopt(r.id!))?.destroy();
  await backend?.close();
  expect(containersWithPrefix(prefix)).toEqual([]);
  expect(mountsUnder(root)).toEqual([]);
  rmSync(root, { recursive: true, force: true });
}, 120_000);

describe("warm pool", () => {
  it("create() claims a warm sandbox with the session's variables, and the pool refills", async () => {
    await backend.waitWarm();
    expect(backend.stats()).toMatchObject({ warm: 1, inUse: 0 });
    const s = await backend.create({
      id: "sess-warm",
      limits,
      network: { mode: "none" },
      env: { SESSION_VAR: "it's here" },
    });
    expect(s.fromPool).toBe(true);
    const c = await ExecClient.open(s.executor.url, s.executor.token);
    clients.push(c);
    const r = await c.run('echo "$SESSION_VAR"; hostname; id -u; echo x > /workspace/f && cat /workspace/f');
    expect(r.stdout).toBe(`it's here\n${s.hostname}\n1000\nx\n`);
    expect(backend.stats().inUse).toBe(1);
    // A spec that does not match the pool is created cold.
    const cold = await backend.create({
      id: "sess-cold",
      limits: { ...limits, pids: 333 },
      network: { mode: "none" },
    });
    expect(cold.fromPool).toBe(false);
    await backend.waitWarm();
    const st = backend.stats();
    expect(st.warm).toBe(1);
    expect(st.inUse).toBe(2);
    expect(st.pools).toEqual([expect.objectContaining({ target: 1, warm: 1, network: "none" })]);
    expect(st.sandboxes.map((x) => x.id).sort()).toEqual([null, "sess-cold", "sess-warm"].sort());
    await cold.destroy();
  });

  it("an idle sandbox is stopped; its next command resumes it over the same connection", async () => {
    const s = backend.get("sess-warm")!;
    const c = clients[0]!;
    await waitFor("the idle stop", () => s.status() === "stopped", 20_000);
    expect(backend.stats().stopped).toBe(1);
    const r = await c.run("cat /workspace/f");
    expect(r.stdout).toBe("x\n");
    expect(s.status()).toBe("running");
    expect(c.closed).toBeNull();
  });

  it("a running command keeps the sandbox from the idle stop", async () => {
    const s = backend.get("sess-warm")!;
    const c = clients[0]!;
    const r = await c.run("sleep 3; echo slept");
    expect(r.stdout).toBe("slept\n");
    expect(s.status()).toBe("running");
  });

  it("a proxy-mode warm sandbox: the egress proxy listens in the sandbox's own directory", async () => {
    backend.setWarm([
      { limits, count: 1 },
      { limits, network: "proxy", count: 1 },
    ]);
    await backend.waitWarm();
    const s = await backend.create({ id: "sess-warm-proxy", limits, network: { mode: "proxy" } });
    expect(s.fromPool).toBe(true);
    if (s.network.mode !== "proxy") throw new Error("not proxy mode");
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end("via egress\n");
    });
    await new Promise<void>((r) =>
      server.listen(s.network.mode === "proxy" ? s.network.socketPath : "", () => r()),
    );
    chmodSync(s.network.socketPath, 0o666);
    try {
      const c = await ExecClient.open(s.executor.url, s.executor.token);
      clients.push(c);
      const r = await c.run("curl -sS -m 10 http://warm.test/x");
      expect(r.stdout).toBe("via egress\n");
      expect(seen).toEqual(["GET http://warm.test/x"]);
    } finally {
      server.close();
    }
  });

  it("warm sandboxes left by a previous run are removed at open; claimed ones are kept for adopt", async () => {
    await backend.close();
    backend = await ContainerBackend.open({ rootDir: root, namePrefix: prefix });
    expect(backend.stats().warm).toBe(0);
    expect((await backend.list()).map((r) => r.id).sort()).toEqual(["sess-warm", "sess-warm-proxy"]);
    // Only the claimed sandboxes' containers are left.
    expect(containersWithPrefix(prefix)).toHaveLength(2);
  });
});

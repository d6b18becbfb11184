// A container sandbox through its executor bridge: where commands run, what they see, the workspace on the host,
// isolation between sandboxes, stop/resume, replace, destroy and adopt after a restart. Real podman, real engine.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContainerBackend, ExecutorClient, limitsForSize, type Sandbox } from "../src/index.js";
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

const prefix = runPrefix("sb");
const root = tempRoot("sb");
const limits = limitsForSize("small", { overrides: { diskBytes: 256 * MiB, tmpBytes: 64 * MiB, pids: 256 } });
let backend: ContainerBackend;
const clients: ExecClient[] = [];
let hostServer: Server;
let hostPort = 0;

async function open(s: Sandbox): Promise<ExecClient> {
  const c = await ExecClient.open(s.executor.url, s.executor.token);
  clients.push(c);
  return c;
}

beforeAll(async () => {
  await ensureImage();
  backend = await ContainerBackend.open({ rootDir: root, namePrefix: prefix });
  // A service on the host's loopback: a sandbox must not reach it.
  hostServer = createServer((sock) => sock.end("host service\n"));
  await new Promise<void>((r) => hostServer.listen(0, "127.0.0.1", () => r()));
  hostPort = (hostServer.address() as { port: number }).port;
}, 300_000);

afterAll(async () => {
  for (const c of clients) c.close();
  for (const r of (await backend?.list()) ?? []) await (await backend.adopt(r.id!))?.destroy();
  await backend?.close();
  hostServer?.close();
  expect(containersWithPrefix(prefix)).toEqual([]);
  expect(mountsUnder(root)).toEqual([]);
  rmSync(root, { recursive: true, force: true });
}, 120_000);

describe("container sandbox", () => {
  it("runs commands inside: own hostname, unprivileged uid, writable /workspace, read-only /, only lo", async () => {
    const s = await backend.create({ id: "Sess-Inside", limits, network: { mode: "none" } });
    expect(s.hostname).toBe("sess-inside");
    expect(s.executor.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    const c = await open(s);
    const r = await c.run(
      "hostname; id -u; id -g; pwd; echo hello > /workspace/hello.txt && echo ws-ok; touch /etc/x 2>&1 || echo root-ro; ls /sys/class/net | tr '\\n' ' '; echo; ip route | wc -l",
    );
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toBe("sess-inside");
    expect(lines[1]).toBe("1000");
    expect(lines[2]).toBe("1000");
    expect(lines[3]).toBe("/workspace");
    expect(lines[4]).toBe("ws-ok");
    expect(r.stdout).toMatch(/Read-only file system/);
    expect(lines.at(-2)?.trim()).toBe("lo");
    expect(lines.at(-1)).toBe("0");
    expect(readFileSync(join(s.workspace.hostPath, "hello.txt"), "utf8")).toBe("hello\n");
    expect(s.workspace.diskLimitEnforced).toBe(true);
    // A file the host puts there is seen inside.
    writeFileSync(join(s.workspace.hostPath, "from-host.txt"), "from host\n");
    expect((await c.run("cat /workspace/from-host.txt")).stdout).toBe("from host\n");
  });

  it("a caller's directory as the workspace: shared by two sandboxes, kept when they are destroyed", async () => {
    const shared = join(root, "shared-workspace");
    const a = await backend.create({
      id: "sess-bind-a",
      limits,
      network: { mode: "none" },
      workspaceDir: shared,
    });
    const b = await backend.create({
      id: "sess-bind-b",
      limits,
      network: { mode: "none" },
      workspaceDir: shared,
    });
    expect(a.workspace).toMatchObject({ hostPath: shared, path: "/workspace", diskLimitEnforced: false });
    expect((await (await open(a)).run("echo from-a > /workspace/a.txt && id -u")).stdout).toBe("1000\n");
    expect((await (await open(b)).run("cat /workspace/a.txt")).stdout).toBe("from-a\n");
    await a.destroy();
    await b.destroy();
    expect(readFileSync(join(shared, "a.txt"), "utf8")).toBe("from-a\n");
    await expect(
      backend.create({ id: "sess-bind-c", limits, network: { mode: "none" }, workspaceDir: "relative/dir" }),
    ).rejects.toThrow(/absolute path/);
  });

  it("ExecutorClient: a command with its variables and directory, its output as it comes; a timeout and an abort end it", async () => {
    const s = backend.get("Sess-Inside")!;
    const c = await ExecutorClient.open(s.executor.url, s.executor.token);
    try {
      const chunks: string[] = [];
      const r = await c.run("echo $GREETING; pwd; echo oops >&2; exit 3", {
        env: { GREETING: "hello there" },
        cwd: "/tmp",
        onOutput: (x) => chunks.push(x),
      });
      expect(r).toMatchObject({
        exitCode: 3,
        stdout: "hello there\n/tmp\n",
        stderr: "oops\n",
        timedOut: false,
      });
      expect(chunks.join("")).toContain("hello there");
      const slow = await c.run("sleep 31", { timeoutMs: 300 });
      expect(slow).toMatchObject({ exitCode: null, timedOut: true });
      const stop = new AbortController();
      const running = c.run("sleep 32; echo never", { signal: stop.signal });
      stop.abort();
      expect(await running).toMatchObject({ exitCode: null, aborted: true, stdout: "" });
      // (The container's own init is a `sleep infinity`.)
      expect((await c.run("pgrep -fc 'sleep 3[12]' || true")).stdout.trim()).toBe("0");
    } finally {
      c.close();
    }
  });

  it("refuses executor connections without the capability token", async () => {
    const s = backend.get("Sess-Inside")!;
    await expect(ExecClient.connect(s.executor.url, null)).rejects.toThrow(/401/);
    await expect(ExecClient.connect(s.executor.url, "wrong")).rejects.toThrow(/401/);
  });

  it("network none: no DNS, no route, the host's loopback services unreachable", async () => {
    const s = backend.get("Sess-Inside")!;
    const c = await open(s);
    const r = await c.run(
      `getent hosts example.com && echo dns-ok || echo dns-failed; curl -sS -m 5 http://127.0.0.1:${hostPort}/ && echo conn-ok || echo conn-failed; env | grep -i _proxy || echo no-proxy-vars`,
    );
    expect(r.stdout).toContain("dns-failed");
    expect(r.stdout).toContain("conn-failed");
    expect(r.stdout).not.toContain("host service");
    expect(r.stdout).toContain("no-proxy-vars");
  });

  it("two sandboxes see neither each other's processes nor files", async () => {
    const a = backend.get("Sess-Inside")!;
    const b = await backend.create({ id: "sess-other", limits, network: { mode: "none" } });
    const ca = await open(a);
    const cb = await open(b);
    await cb.run(
      "echo secret-b > /workspace/b-only.txt; (exec -a marker-b-process sleep 300 >/dev/null 2>&1 &) ; echo started",
    );
    const r = await ca.run(
      "ps -eo args | grep -c '[m]arker-b-process'; ls /workspace; grep -rl secret-b / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head -3; echo end",
    );
    expect(r.stdout.split("\n")[0]).toBe("0");
    expect(r.stdout).not.toContain("b-only.txt");
    expect(r.stdout).not.toContain("/workspace/b-only.txt");
    expect(existsSync(join(b.workspace.hostPath, "b-only.txt"))).toBe(true);
    expect(existsSync(join(a.workspace.hostPath, "b-only.txt"))).toBe(false);
  });

  it("handToAgent: what the host wrote becomes the agent's, a planted link is followed inside the container only", async () => {
    const s = await backend.create({ id: "sess-hand", limits, network: { mode: "none" } });
    const c = await open(s);
    const ws = s.workspace.hostPath;
    mkdirSync(join(ws, "from-host/deep"), { recursive: true, mode: 0o755 });
    writeFileSync(join(ws, "from-host/deep/file.txt"), "host\n", { mode: 0o644 });
    writeFileSync(join(ws, "other.txt"), "other\n", { mode: 0o644 });
    // The agent plants a link to a host path: a chown that followed it on this host would give that file away.
    const bait = join(root, "bait.txt");
    writeFileSync(bait, "root's\n", { mode: 0o644 });
    const planted = await c.run(
      `ln -s ${bait} /workspace/link && ln -s /etc/hostname /workspace/etc-link && echo ok`,
    );
    expect(planted.stdout).toBe("ok\n");
    const before = await c.run("(echo more >> /workspace/from-host/deep/file.txt) 2>&1; echo rc=$?");
    expect(before.stdout).toMatch(/Permission denied/);
    await s.handToAgent(["from-host", "missing"]);
    const after = await c.run(
      "echo more >> /workspace/from-host/deep/file.txt && touch /workspace/from-host/deep/new && echo ok; stat -c %u /workspace/other.txt",
    );
    expect(after.stdout).toBe("ok\n0\n");
    expect(readFileSync(join(ws, "from-host/deep/file.txt"), "utf8")).toBe("host\nmore\n");
    expect(statSync(bait).uid).toBe(process.getuid!());
    await s.handToAgent();
    expect((await c.run("stat -c %u /workspace/other.txt /workspace/link")).stdout).toBe("1000\n1000\n");
    expect(statSync(bait).uid).toBe(process.getuid!());
    await s.stop();
    await s.handToAgent(["other.txt"]); // a stopped container is started for it
    expect(s.status()).toBe("running");
    await expect(s.handToAgent(["../escape"])).rejects.toThrow(/workspace-relative/);
    await s.destroy();
  });

  it("stop keeps the files and the connection; its next message starts the container again", async () => {
    const s = await backend.create({ id: "sess-stop", limits, network: { mode: "none" } });
    const c = await open(s);
    await c.run("echo kept > /workspace/kept.txt");
    await s.stop();
    expect(s.status()).toBe("stopped");
    expect((await s.health()).running).toBe(false);
    // The engine's connection stays open across the idle stop; its next command resumes the container.
    const r = await c.run("cat /workspace/kept.txt; cat /proc/1/cmdline | tr '\\0' ' '");
    expect(r.stdout).toMatch(/^kept\n/);
    expect(s.status()).toBe("running");
    expect(c.closed).toBeNull();
    await s.stop();
    await s.resume();
    expect((await (await open(s)).run("cat /workspace/kept.txt")).stdout).toBe("kept\n");
  });

  it("replace: a new container behind the same URL, the workspace kept, open connections closed for a reconnect", async () => {
    const s = backend.get("sess-stop")!;
    const url = s.executor.url;
    const c = await open(s);
    const before = (await c.run("cat /proc/sys/kernel/random/boot_id; stat -c %Y /proc/1")).stdout;
    await s.replace();
    await waitFor("the old connection to close", () => c.closed);
    expect(c.closed?.code).toBe(1012);
    expect(s.executor.url).toBe(url);
    const c2 = await open(s);
    const r = await c2.run("cat /workspace/kept.txt; stat -c %Y /proc/1");
    expect(r.stdout.split("\n")[0]).toBe("kept");
    expect(r.stdout).not.toBe(before);
    expect((await s.health()).replacements).toBe(1);
  });

  it("a container killed from outside is reported (exit event, status exited) and resumes with its files", async () => {
    const s = backend.get("sess-stop")!;
    const exits: Array<{ exitCode: number | null }> = [];
    s.on("exit", (e) => exits.push(e));
    const { execFileSync } = await import("node:child_process");
    execFileSync("podman", ["kill", s.containerName]);
    await waitFor("the exit event", () => exits.length > 0, 20_000);
    expect(s.status()).toBe("exited");
    expect(exits[0]!.exitCode).not.toBe(0);
    await s.resume();
    expect((await (await open(s)).run("cat /workspace/kept.txt")).stdout).toBe("kept\n");
  });

  it("destroy removes the container, the mount and the image file", async () => {
    const s = await backend.create({ id: "sess-destroy", limits, network: { mode: "none" } });
    const name = s.containerName;
    const hostPath = s.workspace.hostPath;
    const img = join(hostPath, "..", "disk.img");
    expect(existsSync(img)).toBe(true);
    expect(mountsUnder(hostPath).length).toBeGreaterThan(0);
    await s.destroy();
    expect(s.status()).toBe("destroyed");
    expect(containersWithPrefix(name)).toEqual([]);
    expect(mountsUnder(hostPath)).toEqual([]);
    expect(existsSync(img)).toBe(false);
    expect(backend.get("sess-destroy")).toBeUndefined();
    expect((await backend.list()).map((r) => r.id)).not.toContain("sess-destroy");
  });

  it("adopt after a restart of the service finds the container and the workspace again", async () => {
    const s = backend.get("sess-other")!;
    const started = (await (await open(s)).run("echo survived > /workspace/restart.txt; stat -c %Y /proc/1"))
      .stdout;
    const oldUrl = s.executor.url;
    await backend.close();
    // The bridge went with the old backend; the container kept running.
    await expect(ExecClient.connect(oldUrl, "x")).rejects.toThrow();
    backend = await ContainerBackend.open({ rootDir: root, namePrefix: prefix });
    expect((await backend.list()).map((r) => r.id).sort()).toEqual([
      "Sess-Inside",
      "sess-other",
      "sess-stop",
    ]);
    const again = await backend.adopt("sess-other");
    expect(again).not.toBeNull();
    expect(again!.status()).toBe("running");
    const r = await (await open(again!)).run("cat /workspace/restart.txt; stat -c %Y /proc/1");
    // The same container (its init started before the restart), the file written before it.
    expect(r.stdout).toBe(`survived\n${started}`);
    expect(await backend.adopt("no-such-session")).toBeNull();
  });

  it("adopt after the host lost the container and the mount (a reboot) makes both again", async () => {
    const s = (await backend.adopt("sess-stop"))!;
    await (await open(s)).run("echo rebooted > /workspace/reboot.txt");
    const name = s.containerName;
    const hostPath = s.workspace.hostPath;
    await backend.close();
    const { execFileSync } = await import("node:child_process");
    execFileSync("podman", ["rm", "-f", "-t", "0", name]);
    execFileSync("umount", [hostPath]);
    backend = await ContainerBackend.open({ rootDir: root, namePrefix: prefix });
    const again = (await backend.adopt("sess-stop"))!;
    expect(again.status()).toBe("stopped");
    const r = await (await open(again)).run("cat /workspace/reboot.txt /workspace/kept.txt");
    expect(r.stdout).toBe("rebooted\nkept\n");
    expect(again.status()).toBe("running");
  });

  it("rejects a bad spec with a clear error", async () => {
    await expect(backend.create({ id: "../x", limits, network: { mode: "none" } })).rejects.toThrow(
      /id must match/,
    );
    await expect(
      backend.create({ id: "ok", limits: { ...limits, memoryBytes: 5 }, network: { mode: "none" } }),
    ).rejects.toThrow(/memoryBytes/);
    await expect(
      backend.create({ id: "ok", limits, network: { mode: "none" }, env: { "BAD-NAME": "x" } }),
    ).rejects.toThrow(/variable name/);
    await expect(backend.create({ id: "sess-other", limits, network: { mode: "none" } })).rejects.toThrow(
      /exists/,
    );
  });
});

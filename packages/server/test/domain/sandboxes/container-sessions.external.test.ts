// Sessions on the container backend (real Podman, the real engine, the scripted model, the official npm SDK): each
// session's commands run in a container of its own (its workspace, nothing of this host), with no network unless its
// environment allows it (restricted: the egress proxy's allowlist), its environment prepared inside; a restart
// adopts the containers again; a deleted session's container and workspace are gone. The test hosts are on this
// machine under names the proxy resolves (mirror.test, other.test → 127.0.0.6, an allowed private address).
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type OpenAI from "openai";
import type { AgentSessionEvent } from "openai/resources/beta/agents/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  commandOutputs,
  commandTurn,
  filesContaining,
  pythonWheel,
  shell,
} from "../../support/environment-helpers.js";
import { cleanup, type ServerFixture, startServer, waitFor } from "../../support/fixture.js";
import { sdk } from "../../support/openai-helpers.js";
import { ensureSandboxImage, mountsUnder, sandboxRoot } from "../../support/sandbox.js";

const root = sandboxRoot("sess");
const dataDir = sandboxRoot("sess-data");
const args = [
  "--sandbox-backend",
  "container",
  "--sandbox-dir",
  root,
  "--sandbox-size",
  "small",
  "--sandbox-disk",
  "256",
  "--sandbox-max-memory",
  "256",
  "--egress-allow-private",
  "127.0.0.6/32",
  "--egress-host",
  "mirror.test=127.0.0.6",
  "--egress-host",
  "other.test=127.0.0.6",
  "--allow-env-credentials",
  "--allow-mcp-stdio",
];
let f: ServerFixture;
let client: OpenAI;
let mirror: Server;
const sessions: string[] = [];
/** The `x-key` header of each request the mirror got, by host. */
const keys: Array<{ host: string | undefined; key: string | undefined }> = [];

beforeAll(async () => {
  await ensureSandboxImage();
  mirror = createServer((req, res) => {
    const key = req.headers["x-key"];
    keys.push({ host: req.headers.host, key: typeof key === "string" ? key : undefined });
    res.end(`mirror says hi to ${req.headers.host}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    mirror.once("error", reject);
    mirror.listen(80, "127.0.0.6", () => resolve());
  });
  f = await startServer({ args, dataDir });
  client = sdk(f);
}, 300_000);

afterAll(async () => {
  for (const id of sessions) await client?.beta.agents.sessions.delete(id).catch(() => undefined);
  await f?.close();
  mirror?.close();
  expect(mountsUnder(root)).toEqual([]);
  rmSync(root, { recursive: true, force: true });
  cleanup(dataDir);
}, 120_000);

const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

/** A new session whose first turn runs `cmd` (a streamed create: it returns once the turn has ended). */
async function start(cmd: string, environment?: Record<string, unknown>) {
  const stream = await client.beta.agents.sessions.create({
    agent: { model: "mock-model" },
    // (no environment: the server's own workspace, as a self-hosted environment)
    environment: (environment ?? { type: "self_hosted" }) as never,
    input: shell(cmd),
    stream: true,
  });
  const events: AgentSessionEvent[] = [];
  for await (const e of stream) events.push(e);
  const created = events.find((e) => e.type === "agent.session.created") as { session: { id: string } };
  const id = created.session.id;
  sessions.push(id);
  return { id, events, output: (await commandOutputs(client, id)).join("\n") };
}

/** Another turn of the session running `cmd`: what its command printed. */
const send = (id: string, cmd: string) => commandTurn(client, id, cmd);

/**
 * A stdio MCP server with one tool, `whoami`: where it runs (host name, uid, cwd), its `$MCP_SECRET` and whether it
 * sees this service's data directory. Python without packages: the image has it, nothing needs installing.
 */
const whereServer = (dataDir: string) => `
import json, os, socket, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m: continue
    method = m.get("method")
    if method == "initialize":
        r = {"protocolVersion": m["params"].get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
             "serverInfo": {"name": "where", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "whoami", "description": "Where this server runs.",
                        "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        seen = "SEES-HOST" if os.path.exists(${JSON.stringify(dataDir)}) else "NO-HOST"
        r = {"content": [{"type": "text", "text": "%s uid=%d cwd=%s secret=%s %s" % (socket.gethostname(),
             os.getuid(), os.getcwd(), os.environ.get("MCP_SECRET", "(none)"), seen)}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": method}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
`;

const workspaceOf = async (id: string) => (await f.service.core.store.getSession(id))!.workspace;
const curl = (url: string) => `curl -s -m 10 -w ' [%{http_code}]' ${url}; echo " rc=$?"`;

describe("sessions on the container backend", () => {
  let first: string;

  it("a session's commands run in its own container: its workspace, its user, nothing of this host", async () => {
    const { id, output } = await start(
      `id -u; pwd; echo made-here > made.txt; ls -A /workspace; test -e ${f.dataDir} && echo SEES-HOST || echo NO-HOST`,
    );
    first = id;
    expect(output).toMatch(/^1000\n\/workspace\n/);
    expect(output).toContain("made.txt");
    expect(output).toContain("NO-HOST");
    const session = await f.service.core.store.getSession(id);
    expect(session?.extra.sandbox_id).toBe(id);
    // The workspace the container wrote is on this host (checkpoints, artifacts read it there).
    expect(readFileSync(join(session!.workspace, "made.txt"), "utf8")).toBe("made-here\n");
    expect(session!.workspace.startsWith(root)).toBe(true);
    // /health counts containers (never names them: it is open).
    const health = await f.json<{ sandboxes: Record<string, unknown> }>("GET", "/health");
    expect(health.body.sandboxes).toMatchObject({ backend: "container", in_use: 1, warm: 0 });
    expect(JSON.stringify(health.body)).not.toContain(id);
  });

  it("a command over the container's memory is killed; the session and its container go on", async () => {
    const output = await send(
      first,
      `python3 -c 'x = bytearray(600 * 1024 * 1024); print(len(x))'; echo "rc=$?"; cat made.txt`,
    );
    expect(output).toMatch(/rc=137/);
    expect(output).toContain("made-here");
    // Its item says why (the python process, not the command's shell, was killed).
    expect(output).toMatch(
      /\[a process of this command was killed: out of memory \(its container's limit is 256 MiB\)\]$/,
    );
    // The command itself killed (its start may be told after it died): exit code 137, said so.
    const itself = await send(first, `exec python3 -c 'x = bytearray(600 * 1024 * 1024)'`);
    expect(itself).toMatch(
      /\[command killed: out of memory \(its container's limit is 256 MiB\), exit code 137\]$/,
    );
    // /metrics counts the kill (the cgroup is read each second) and shows the limit it ran into.
    const metric = async (line: RegExp) => line.exec(await (await f.request("GET", "/metrics")).text())?.[1];
    await waitFor(
      async () =>
        Number(await metric(/^codex_agent_api_sandbox_limit_hits_total\{limit="memory"\} (\S+)$/m)) >= 1,
      10_000,
      "the OOM kill in /metrics",
    );
    const memoryLimit = await metric(
      /^codex_agent_api_sandbox_default_limit\{resource="memory_bytes"\} (\S+)$/m,
    );
    expect(Number(memoryLimit)).toBe(256 * 1024 * 1024);
    expect(
      Number(await metric(/^codex_agent_api_sandboxes\{state="in_use"\} (\S+)$/m)),
    ).toBeGreaterThanOrEqual(1);
    expect(Number(await metric(/^codex_agent_api_sandbox_memory_bytes (\S+)$/m))).toBeGreaterThan(0);
  });

  it("another session sees neither the first one's files nor any network", async () => {
    const { output } = await start(
      `ls -A /workspace; cat made.txt 2>&1 || true; ${curl("http://mirror.test/")}; echo "proxy=$HTTP_PROXY"`,
    );
    expect(output).not.toContain("made-here");
    expect(output).toMatch(/No such file/);
    // No proxy endpoint was opened for it: the request fails before any host is reached.
    expect(output).not.toContain("mirror says hi");
    expect(output).toMatch(/rc=[1-9]/);
  });

  it("an environment is prepared inside the container; restricted reaches only its allowed names", async () => {
    const { id, events, output } = await start(
      [
        "cat data/hello.txt setup.txt",
        `python -c 'import tinypy; print(tinypy.VALUE)'`,
        'echo "greeting is $GREETING"',
        curl("http://mirror.test/"),
        curl("http://other.test/"),
      ].join("; "),
      {
        type: "openai_hosted",
        container_size: "small",
        files: [
          { type: "inline", path: "/workspace/data/hello.txt", data: b64("hello from a file\n") },
          { type: "inline", path: "/workspace/vendor/tinypy-0.1-py3-none-any.whl", data: b64(pythonWheel()) },
        ],
        packages: { python: ["./vendor/tinypy-0.1-py3-none-any.whl"] },
        setup_commands: [{ command: 'echo "setup ran as $(id -u) in $(pwd)" > setup.txt' }],
        env: { GREETING: "hi" },
        network: { access: "restricted", allowed_domains: ["mirror.test"] },
      },
    );
    const states = events
      .filter((e) => e.type.startsWith("agent.session.environment."))
      .map((e) => (e as unknown as { environment: { status: string } }).environment.status);
    expect(states).toEqual(["pending", "ready", "connected"]);
    expect(output).toContain("hello from a file");
    expect(output).toContain("setup ran as 1000 in /workspace");
    expect(output).toContain("py-ok");
    expect(output).toContain("greeting is hi");
    expect(output).toMatch(/mirror says hi to mirror\.test\n \[200\] rc=0/);
    expect(output).toMatch(/"reason":"not_allowed".* \[403\]/s);
    expect((await f.service.core.store.getSession(id))?.extra.sandbox_id).toBe(id);
  });

  it("a vault's environment-variable credential never enters the container: its proxy puts it in requests to the credential's hosts", async () => {
    const value = `sk-live-${randomBytes(16).toString("hex")}`;
    const vault = await client.beta.agents.vaults.create({});
    await client.beta.agents.vaults.credentials.create(vault.id, {
      name: "mirror key",
      auth: {
        type: "environment_variable",
        secret_name: "MIRROR_KEY",
        secret_value: value,
        networking: { type: "limited", allowed_hosts: ["mirror.test"] },
      },
    } as never);
    keys.length = 0;
    const stream = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: {
        type: "openai_hosted",
        network: { access: "restricted", allowed_domains: ["mirror.test", "other.test"] },
      },
      vault_ids: [vault.id],
      input: shell(
        `echo "key=$MIRROR_KEY"; ${curl('-H "x-key: $MIRROR_KEY" http://mirror.test/')}; ${curl('-H "x-key: $MIRROR_KEY" http://other.test/')}`,
      ),
      stream: true,
    } as never);
    const events: AgentSessionEvent[] = [];
    for await (const e of stream as AsyncIterable<AgentSessionEvent>) events.push(e);
    const id = (events.find((e) => e.type === "agent.session.created") as { session: { id: string } }).session
      .id;
    sessions.push(id);
    const output = (await commandOutputs(client, id)).join("\n");
    // The command saw the placeholder, not the value.
    expect(output).toMatch(/key=cas-secret-MIRROR_KEY-[0-9a-f]{32}\n/);
    expect(output).toMatch(/mirror says hi to mirror\.test\n \[200\]/);
    // The credential's host got the value; another allowed host only the placeholder.
    expect(keys).toEqual([
      { host: "mirror.test", key: value },
      { host: "other.test", key: expect.stringMatching(/^cas-secret-MIRROR_KEY-/) },
    ]);
    // Nothing in the container holds it.
    expect(filesContaining(await workspaceOf(id), value)).toEqual([]);
  });

  it("an environment made ahead has a sandbox of its own, which its session then works in", async () => {
    const env = await client.beta.agents.environments.create({
      environment: {
        type: "openai_hosted",
        setup_commands: [{ command: "echo prepared-ahead > ahead.txt" }],
      },
    } as never);
    await waitFor(
      async () => (await client.beta.agents.environments.retrieve(env.id)).status === "ready",
      60_000,
      "the environment",
    );
    const { id, output } = await start("cat ahead.txt; pwd", {
      type: "openai_hosted",
      environment_id: env.id,
    });
    expect(output).toBe("prepared-ahead\n/workspace\n");
    expect((await f.service.core.store.getSession(id))?.extra.sandbox_id).toBe(env.id);
    const workspace = await workspaceOf(id);
    await client.beta.agents.sessions.delete(id);
    sessions.splice(sessions.indexOf(id), 1);
    expect(existsSync(workspace)).toBe(false);
    expect(f.service.core.sandboxes?.backend.get(env.id)).toBeFalsy();
  });

  it("a stdio MCP server runs in the session's container, with its environment, never on this host", async () => {
    const secret = `mcp-${randomBytes(8).toString("hex")}`;
    const s = (await client.beta.agents.sessions.create({
      environment: { type: "self_hosted" },
      agent: {
        model: "mock-model",
        tools: [
          {
            type: "mcp",
            server_label: "local",
            transport: {
              type: "stdio",
              command: "python3",
              args: ["-c", whereServer(f.dataDir)],
              env: { MCP_SECRET: secret },
            },
          },
        ],
      },
    } as never)) as unknown as { id: string };
    sessions.push(s.id);
    expect(JSON.stringify(s)).not.toContain(secret);
    const r = await client.beta.agents.sessions
      .stream(s.id, {
        input: "Call the MCP tool whoami on server local with arguments {}. Then reply with its output",
      })
      .finalResult();
    const sandbox = f.service.core.sandboxes?.backend.get(s.id);
    expect(sandbox).toBeTruthy();
    expect(r.output_text).toBe(`${sandbox!.hostname} uid=1000 cwd=/workspace secret=${secret} NO-HOST`);
    // The server is a running process of the container (it is not stopped for idleness under the engine's thread).
    expect(sandbox!.runningProcesses()).toBeGreaterThanOrEqual(1);
    // The agent's own command sees the server as one of its container's processes.
    const ps = await send(s.id, "ps -eo args | grep -c '[p]ython3 -c'");
    expect(ps.trim()).toBe("1");
  });

  it("a restart adopts the containers: the session goes on in the same workspace", async () => {
    await f.close({ keepData: true });
    f = await startServer({ args, dataDir });
    client = sdk(f);
    const output = await send(first, "cat made.txt; hostname");
    expect(output).toContain("made-here");
  });

  it("a deleted session's container and workspace are gone", async () => {
    const workspace = await workspaceOf(first);
    await client.beta.agents.sessions.delete(first);
    sessions.splice(sessions.indexOf(first), 1);
    expect(existsSync(workspace)).toBe(false);
    expect(mountsUnder(workspace)).toEqual([]);
    expect(f.service.core.sandboxes?.backend.get(first)).toBeFalsy();
  });
});

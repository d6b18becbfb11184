// Environments this server prepares (official `openai_hosted`), with the real engine and the scripted model, through
// the official npm SDK: files, packages (an npm tarball and a Python wheel shipped as files: offline), setup
// commands, variables, the network policy, templates (no broadening), environments made ahead and their files,
// failures (code and log tail), setup commands kept in the sandbox, self-hosted directories, what is refused.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type OpenAI from "openai";
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  UnprocessableEntityError,
} from "openai";
import type { AgentSessionEvent } from "openai/resources/beta/agents/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  commandOutputs,
  everythingAbout,
  npmTarball,
  pythonWheel,
  sha256,
  shell,
} from "../../support/environment-helpers.js";
import { type ServerFixture, startServer, waitFor } from "../../support/fixture.js";
import { EventLog, expectApiError, messageEvent, rejection, sdk } from "../../support/openai-helpers.js";
import { onContainerBackend } from "../../support/sandbox.js";

let f: ServerFixture;
let client: OpenAI;

beforeAll(async () => {
  f = await startServer();
  client = sdk(f);
});
afterAll(async () => {
  await f?.close();
});

const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

type EnvEvent = AgentSessionEvent & {
  environment: { id: string; status: string; error: { code: string; message: string } | null };
};
const isEnvEvent = (e: AgentSessionEvent): e is EnvEvent => e.type.startsWith("agent.session.environment.");

/**
 * Creates a session with an environment and a first command (a streamed create: the whole log from its start);
 * returns the session id, the events, the final text and what its commands printed.
 */
async function runIn(environment: Record<string, unknown>, cmd: string) {
  const stream = await client.beta.agents.sessions.create({
    agent: { model: "mock-model" },
    environment: environment as never,
    input: shell(cmd),
    stream: true,
  });
  const events: AgentSessionEvent[] = [];
  for await (const e of stream) events.push(e);
  const created = events.find((e) => e.type === "agent.session.created") as
    | { session: { id: string } }
    | undefined;
  const id = created!.session.id;
  const outputs = await commandOutputs(client, id);
  const text = events
    .filter((e) => e.type === "agent.session.turn.output_text.delta")
    .map((e) => (e as { delta: string }).delta);
  return { id, events, text: text.join(""), output: outputs.join("\n") };
}

const NPM_PACKAGES = ["./vendor/tiny-1.0.0.tgz"];

describe("openai_hosted environments", () => {
  it("files, an npm package, a Python package and a setup command are there before the first command; variables reach commands, never responses", async () => {
    const token = `tok-${randomBytes(12).toString("hex")}`;
    const { id, events, text, output } = await runIn(
      {
        type: "openai_hosted",
        files: [
          { type: "inline", path: "/workspace/data/hello.txt", data: b64("hello from a file\n") },
          { type: "inline", path: "/workspace/vendor/tiny-1.0.0.tgz", data: b64(npmTarball()) },
          { type: "inline", path: "/workspace/vendor/tinypy-0.1-py3-none-any.whl", data: b64(pythonWheel()) },
        ],
        packages: { npm: NPM_PACKAGES, python: ["./vendor/tinypy-0.1-py3-none-any.whl"] },
        setup_commands: [
          { command: 'echo "setup saw $(tiny-cli)" > setup.txt' },
          { command: "pwd > where.txt", cwd: "/workspace/data" },
        ],
        env: { MY_TOKEN: token, GREETING: "hi" },
      },
      [
        "cat data/hello.txt setup.txt data/where.txt",
        "tiny-cli",
        `node -e 'console.log(require("tiny").value)'`,
        `python -c 'import tinypy; print(tinypy.VALUE)'`,
        'printf %s "$MY_TOKEN" | sha256sum',
        'echo "token is $MY_TOKEN"',
        'echo "greeting is $GREETING"',
      ].join("; "),
    );
    expect(text).toBe("done");
    expect(output).toContain("hello from a file");
    // (In a container, setup runs as the agent's own user.)
    expect(output).toContain("setup saw tiny-ok");
    expect(output).toMatch(/\/data\n/);
    expect(output).toContain("tiny-value");
    expect(output).toContain("py-ok");
    // The variable reached the command (its hash), but what the session stores has it replaced.
    expect(output).toContain(sha256(token));
    expect(output).toContain("token is [redacted]");
    expect(output).toContain("greeting is hi");
    expect(await everythingAbout(client, id)).not.toContain(token);
    for (const e of events) expect(JSON.stringify(e)).not.toContain(token);

    // The environment's lifecycle on the session's stream: pending, ready, then connected once the thread binds
    // (before the turn's first item).
    const states = events.filter(isEnvEvent).map((e) => e.environment.status);
    expect(states).toEqual(["pending", "ready", "connected"]);
    const connectedAt = events.findIndex((e) => e.type === "agent.session.environment.connected");
    expect(connectedAt).toBeLessThan(events.findIndex((e) => e.type === "agent.session.turn.item.added"));

    // The session shows its environment without secrets; so does the environment itself.
    const session = await client.beta.agents.sessions.retrieve(id);
    const env = session.environment as Extract<typeof session.environment, { type: "openai_hosted" }>;
    expect(env).toMatchObject({
      type: "openai_hosted",
      network: { access: "disabled", allowed_domains: [] },
      packages: {
        npm: NPM_PACKAGES,
        python: ["./vendor/tinypy-0.1-py3-none-any.whl"],
        system: [],
      },
    });
    expect(env.files.map((x) => x.path)).toEqual([
      "/workspace/data/hello.txt",
      "/workspace/vendor/tiny-1.0.0.tgz",
      "/workspace/vendor/tinypy-0.1-py3-none-any.whl",
    ]);
    expect(env.files[0]).toMatchObject({ type: "inline", size_bytes: 18 });
    const info = await client.beta.agents.environments.retrieve(env.id);
    expect(info).toMatchObject({
      id: env.id,
      object: "agent.environment",
      type: "openai_hosted",
      status: "connected",
    });
    expect(JSON.stringify(info)).not.toContain(token);
    expect(JSON.stringify(session)).not.toContain("setup saw");
  });
});

/** Every page of a list the SDK paginates. */
async function all<T>(list: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of list) out.push(x);
  return out;
}

describe("what clients see of a session's files", () => {
  it("artifacts and the environment's files: the same paths inside the environment, its id, what setup made published by no turn; nothing a client reads names this host's directories", async () => {
    const { id, events } = await runIn(
      {
        type: "openai_hosted",
        files: [{ type: "inline", path: "/workspace/data/input.csv", data: b64("a,b\n1,2\n") }],
        setup_commands: [{ command: "mkdir -p made && echo by-setup > made/by-setup.txt" }],
      },
      "mkdir -p out && echo by-the-turn > out/result.txt",
    );
    const session = await client.beta.agents.sessions.retrieve(id);
    const envId = (session.environment as { id: string }).id;
    expect(envId).toMatch(/^env_/);
    const [turn, ...more] = await all(client.beta.agents.sessions.turns.list(id));
    expect(more).toEqual([]);

    const artifacts = await all(client.beta.agents.sessions.artifacts.list(id, { order: "asc" }));
    const byPath = new Map(artifacts.map((a) => [a.path, a]));
    expect(artifacts.every((a) => a.path.startsWith("/workspace/"))).toBe(true);
    expect(artifacts.every((a) => a.environment_id === envId)).toBe(true);
    // The client's file and what the setup command made were there before the turn: no turn published them.
    expect(byPath.get("/workspace/data/input.csv")).toMatchObject({ turn_id: "", size_bytes: 8 });
    expect(byPath.get("/workspace/made/by-setup.txt")).toMatchObject({ turn_id: "", size_bytes: 9 });
    expect(byPath.get("/workspace/out/result.txt")).toMatchObject({ turn_id: turn!.id, size_bytes: 12 });
    const result = byPath.get("/workspace/out/result.txt")!;
    expect(await client.beta.agents.sessions.artifacts.retrieve(result.id, { session_id: id })).toEqual(
      result,
    );
    // The environment's own listing shows the same files at the same paths.
    const files = await all(client.beta.agents.environments.files.list(envId, { order: "asc" }));
    expect(files.map((x) => x.path)).toEqual(artifacts.map((a) => a.path));
    expect(files.every((x) => x.environment_id === envId)).toBe(true);
    // Listing by environment: its own id lists them all, another none.
    expect(await all(client.beta.agents.sessions.artifacts.list(id, { environment_id: envId }))).toHaveLength(
      artifacts.length,
    );
    expect(
      await all(client.beta.agents.sessions.artifacts.list(id, { environment_id: "env_local" })),
    ).toEqual([]);

    // The command ran in /workspace, as far as any client can tell.
    const items = await all(client.beta.agents.sessions.items.list(id, { order: "asc" }));
    const command = items.find((i) => i.type === "command_execution") as { cwd: string | null } | undefined;
    expect(command?.cwd).toBe("/workspace");
    const seen = JSON.stringify([
      events,
      await everythingAbout(client, id),
      artifacts,
      files,
      items,
      await all(client.beta.agents.sessions.turns.items.list(turn!.id, { session_id: id })),
      await all(client.beta.agents.sessions.traces.list(id)),
      await client.beta.agents.environments.retrieve(envId),
    ]);
    expect(seen).toContain("by-the-turn");
    for (const host of new Set([
      f.workspace,
      realpathSync(f.workspace),
      f.dataDir,
      realpathSync(f.dataDir),
    ])) {
      expect(seen).not.toContain(host);
    }
  });
});

/** A workspace file of the session, through the artifacts API (ids: base64url of the relative path). */
async function workspaceFile(sessionId: string, rel: string): Promise<string> {
  const id = Buffer.from(rel).toString("base64url");
  const res = await client.beta.agents.sessions.artifacts.content(id, { session_id: sessionId });
  return res.text();
}

const envEvents = (events: AgentSessionEvent[]) => events.filter(isEnvEvent);

describe("failures and isolation of setup", () => {
  it("a failing setup command: its code and the tail of its output reach the client; turns fail saying why", async () => {
    const { id, events } = await runIn(
      {
        type: "openai_hosted",
        setup_commands: [
          { command: "echo first step ok" },
          { command: "echo preparing the thing; echo boom-detail >&2; exit 3" },
          { command: "echo never-runs > never.txt" },
        ],
      },
      "ls",
    );
    const failed = envEvents(events).find((e) => e.type === "agent.session.environment.failed");
    expect(failed?.environment.error).toMatchObject({
      code: "setup_command_failed",
      type: "environment_error",
    });
    expect(failed?.environment.error?.message).toContain("setup command 2/3 exited 3");
    expect(failed?.environment.error?.message).toContain("preparing the thing");
    expect(failed?.environment.error?.message).toContain("boom-detail");
    expect(failed?.environment.error?.message).not.toContain("first step ok");
    const turnFailed = events.find((e) => e.type === "agent.session.turn.failed") as
      | { turn: { error: { message: string } } }
      | undefined;
    expect(turnFailed?.turn.error.message).toContain("environment");
    expect(turnFailed?.turn.error.message).toContain("boom-detail");
    const session = await client.beta.agents.sessions.retrieve(id);
    const env = session.environment as { id: string };
    expect(await client.beta.agents.environments.retrieve(env.id)).toMatchObject({ status: "failed" });
    // The session is still there and answers; its next turn fails the same clear way.
    const again = await client.beta.agents.sessions
      .stream(id, { input: "Reply with exactly: x" })
      .finalResult()
      .then(
        () => null,
        (err: unknown) => err,
      );
    const turns: Array<{ status: string; error: { message: string } | null }> = [];
    for await (const t of client.beta.agents.sessions.turns.list(id)) turns.push(t as never);
    expect(turns).toHaveLength(2);
    expect(
      turns.every((t) => t.status === "failed" && t.error?.message.includes("setup_command_failed")),
    ).toBe(true);
    expect(again).not.toBeNull();
  });

  it("setup commands run in the agent's sandbox: the data directory and other workspaces are out of reach", async () => {
    const other = await runIn({ type: "openai_hosted" }, "echo other-secret > mine.txt");
    const otherDir = (await client.beta.agents.sessions.retrieve(other.id)).environment as { id: string };
    const { events } = await runIn(
      {
        type: "openai_hosted",
        setup_commands: [
          {
            command:
              `cat ${join(f.dataDir, "agents.db")} > /dev/null && echo LEAKED-DB; ` +
              `cat ${join(f.workspace, otherDir.id, "mine.txt")} && echo LEAKED-OTHER; ` +
              `ls ${join(f.dataDir, "codex-home")} && echo LEAKED-HOME; echo probe-done; exit 1`,
          },
        ],
      },
      "ls",
    );
    const failed = envEvents(events).find((e) => e.type === "agent.session.environment.failed");
    const message = failed?.environment.error?.message ?? "";
    expect(message).toContain("probe-done");
    expect(message).toContain("No such file or directory");
    expect(message).not.toContain("LEAKED");
    expect(message).not.toContain("other-secret");
  });
});

describe("waiting for an environment", () => {
  it("input while it is prepared waits; a cancel ends the wait at once; deleting the session stops the preparation", async () => {
    const s = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: { type: "openai_hosted", setup_commands: [{ command: "echo long setup; sleep 120" }] },
    });
    const envId = (s.environment as { id: string }).id;
    const log = await EventLog.open(client, s.id);
    await client.beta.agents.sessions.events.create(s.id, { events: [messageEvent(shell("echo never"))] });
    const turnId = await log.turnCreated(0);
    expect((await client.beta.agents.environments.retrieve(envId)).status).toBe("pending");
    await client.beta.agents.sessions.events.create(s.id, {
      events: [{ type: "agent.session.input.cancel" }],
    });
    const { end } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.cancelled");
    expect(await commandOutputs(client, s.id)).toEqual([]);
    await log.close();

    await client.beta.agents.sessions.delete(s.id);
    expect((await client.beta.agents.environments.retrieve(envId)).status).toBe("expired");
    // The setup command was stopped (it would sleep for two minutes): its end is in the setup log.
    const setupLog = join(f.dataDir, "environments", envId, "setup.log");
    await waitFor(
      () => existsSync(setupLog) && /setup command 1\/1: exit/.test(readFileSync(setupLog, "utf8")),
      20_000,
      "the setup command to be stopped",
    );
    expect(readFileSync(setupLog, "utf8")).not.toMatch(/exit 0/);
    expect((await client.beta.agents.environments.retrieve(envId)).status).toBe("expired");
  });
});

describe("network", () => {
  const probe = () =>
    `curl -sS -m 5 -o /dev/null -w "%{http_code}" ${f.url}/health > net.txt 2>&1; echo " rc=$?" >> net.txt`;

  it("is off unless asked: a command's request fails", async () => {
    const { id } = await runIn({ type: "openai_hosted" }, probe());
    const net = await workspaceFile(id, "net.txt");
    // No route at all (local); in a container, the egress proxy ends the connection (the network is off).
    expect(net).toMatch(onContainerBackend ? /rc=(52|56)/ : /rc=7/);
    expect(net).not.toContain("200");
  });

  it("network access 'enabled' lets the agent's commands connect", async () => {
    const { id } = await runIn({ type: "openai_hosted", network: { access: "enabled" } }, probe());
    const net = await workspaceFile(id, "net.txt");
    // In a container the network is the egress proxy's, which never lets a command reach this service (loopback):
    // its refusal is the answer (test/domain/sandboxes: an allowed host is reached).
    expect(net).toMatch(onContainerBackend ? /^403 rc=0/ : /^200 rc=0/);
    const session = await client.beta.agents.sessions.retrieve(id);
    expect((session.environment as { network: unknown }).network).toEqual({
      access: "enabled",
      allowed_domains: [],
    });
  });

  it.skipIf(!onContainerBackend)(
    "'restricted' (domain lists) is taken on the container backend",
    async () => {
      const s = await client.beta.agents.sessions.create({
        agent: { model: "mock-model" },
        environment: {
          type: "openai_hosted",
          network: { access: "restricted", allowed_domains: ["pypi.org"] },
        },
      });
      expect((s.environment as { network: unknown }).network).toEqual({
        access: "restricted",
        allowed_domains: ["pypi.org"],
      });
      await client.beta.agents.sessions.delete(s.id);
    },
  );

  it.skipIf(onContainerBackend)(
    "'restricted' (domain lists) is refused: the sandbox has no proxy that would enforce it",
    async () => {
      const err = await rejection(
        client.beta.agents.sessions.create({
          agent: { model: "mock-model" },
          environment: {
            type: "openai_hosted",
            network: { access: "restricted", allowed_domains: ["pypi.org"] },
          },
        }),
      );
      const e = expectApiError(err, UnprocessableEntityError, 422);
      expect(e.code).toBe("unsupported_network_policy");
      expect(e.param).toBe("environment.network.access");
    },
  );
});

describe("templates", () => {
  it("create, retrieve, list, update, delete; confidential parts never come back", async () => {
    const created = await client.beta.agents.environments.templates.create({
      name: "python box",
      env: { TEMPLATE_SECRET: "template-secret-value" },
      files: [{ type: "inline", path: "/workspace/README.md", data: b64("# from the template\n") }],
      setup_commands: [{ command: "echo confidential-command > from-template.txt" }],
      network: { access: "enabled" },
      packages: { npm: ["left-pad@1.3.0"] },
    });
    expect(created).toMatchObject({
      object: "agent.environment.template",
      name: "python box",
      files: [{ type: "inline", path: "/workspace/README.md", size_bytes: 20 }],
      network: { access: "enabled", allowed_domains: [] },
      packages: { npm: ["left-pad@1.3.0"], python: [], system: [] },
      capability_directories: [],
      plugins: [],
      skills: [],
    });
    const shown = JSON.stringify([
      created,
      await client.beta.agents.environments.templates.retrieve(created.id),
      (await client.beta.agents.environments.templates.list()).data,
    ]);
    for (const secret of ["template-secret-value", "confidential-command", "IyBmcm9t"])
      expect(shown).not.toContain(secret);

    const updated = await client.beta.agents.environments.templates.update(created.id, {
      name: null,
      network: { access: "disabled" },
    });
    expect(updated).toMatchObject({
      name: null,
      network: { access: "disabled" },
      packages: { npm: ["left-pad@1.3.0"] },
    });
    expect(updated.files).toHaveLength(1);
    const ids = [];
    for await (const t of client.beta.agents.environments.templates.list()) ids.push(t.id);
    expect(ids).toContain(created.id);
    expect(await client.beta.agents.environments.templates.delete(created.id)).toEqual({
      id: created.id,
      object: "agent.environment.template.deleted",
      deleted: true,
    });
    expectApiError(
      await rejection(client.beta.agents.environments.templates.retrieve(created.id)),
      NotFoundError,
      404,
    );
  });

  it("a session inherits its template (files, variables, setup first) and may add to it; an override cannot broaden the network", async () => {
    const t = await client.beta.agents.environments.templates.create({
      // (short values: values of 8 characters or more are redacted from what the session stores)
      env: { FROM_TEMPLATE: "tvalue" },
      files: [{ type: "inline", path: "/workspace/base.txt", data: b64("base file\n") }],
      setup_commands: [{ command: "echo template-setup > order.txt" }],
    });
    const broadened = await rejection(
      client.beta.agents.sessions.create({
        agent: { model: "mock-model" },
        environment: { type: "openai_hosted", environment_template_id: t.id, network: { access: "enabled" } },
      }),
    );
    const e = expectApiError(broadened, BadRequestError, 400);
    expect(e.code).toBe("network_policy_broadened");
    expect(e.message).toMatch(/broadens the template's network policy/);

    const { id, output } = await runIn(
      {
        type: "openai_hosted",
        environment_template_id: t.id,
        network: { access: "disabled" },
        files: [{ type: "inline", path: "/workspace/extra.txt", data: b64("extra file\n") }],
        setup_commands: [{ command: "echo session-setup >> order.txt" }],
        env: { FROM_SESSION: "svalue" },
      },
      'cat base.txt extra.txt order.txt; echo "vars: $FROM_TEMPLATE $FROM_SESSION"',
    );
    expect(output).toContain("base file\nextra file\ntemplate-setup\nsession-setup");
    expect(output).toContain("vars: tvalue svalue");
    const env = (await client.beta.agents.sessions.retrieve(id)).environment as {
      files: Array<{ path: string }>;
    };
    expect(env.files.map((x) => x.path)).toEqual(["/workspace/base.txt", "/workspace/extra.txt"]);

    // Another template that allows the network: a session may narrow it.
    const open = await client.beta.agents.environments.templates.create({ network: { access: "enabled" } });
    const narrowed = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: {
        type: "openai_hosted",
        environment_template_id: open.id,
        network: { access: "disabled" },
      },
    });
    expect((narrowed.environment as { network: { access: string } }).network.access).toBe("disabled");
    const unknown = await rejection(
      client.beta.agents.sessions.create({
        agent: { model: "mock-model" },
        environment: { type: "openai_hosted", environment_template_id: "envtpl_nope" },
      }),
    );
    expectApiError(unknown, NotFoundError, 404);
  });
});

describe("what this server does not do is refused, never ignored", () => {
  const refused = async (environment: Record<string, unknown>, status: number, code: string) => {
    const err = await rejection(
      client.beta.agents.sessions.create({
        agent: { model: "mock-model" },
        environment: environment as never,
      }),
    );
    const e = err as { status: number; code: string; message: string };
    expect({ status: e.status, code: e.code }, e.message).toEqual({ status, code });
    return e;
  };

  it("system packages, skills, plugins, a desktop, paths outside /workspace, unknown uploads", async () => {
    // Files API references are taken (files.engine.test.ts): one that names no upload of the project is 404.
    const fileId = await refused(
      { type: "openai_hosted", files: [{ type: "file_id", file_id: "file-1", path: "/workspace/a" }] },
      404,
      "not_found",
    );
    expect(fileId.message).toMatch(/file-1/);
    const system = await refused(
      { type: "openai_hosted", packages: { system: ["jq"] } },
      422,
      "unsupported_system_packages",
    );
    expect(system.message).toMatch(onContainerBackend ? /--sandbox-image/ : /--environment-system-installer/);
    await refused(
      { type: "openai_hosted", skills: [{ type: "skill_reference", skill_id: "sk_1" }] },
      422,
      "unsupported_environment_feature",
    );
    await refused(
      { type: "openai_hosted", plugins: [{ type: "inline", name: "p", description: "d", source: {} }] },
      422,
      "unsupported_environment_feature",
    );
    await refused(
      { type: "openai_hosted", desktop: { enabled: true } },
      422,
      "unsupported_environment_feature",
    );
    for (const path of [
      "/etc/passwd",
      "/workspace/../etc/x",
      "/workspace/.codex/config.toml",
      "workspace/a",
      "/workspace/a//b",
    ]) {
      await refused(
        { type: "openai_hosted", files: [{ type: "inline", path, data: "" }] },
        400,
        "invalid_request_error",
      );
    }
    await refused(
      { type: "openai_hosted", setup_commands: [{ command: "true", cwd: "/tmp" }] },
      400,
      "invalid_request_error",
    );
    await refused({ type: "openai_hosted", env: { PATH: "/evil" } }, 400, "invalid_request_error");
    await refused(
      { type: "openai_hosted", packages: { npm: ["--registry=http://evil"] } },
      400,
      "invalid_request_error",
    );
    await refused(
      { type: "openai_hosted", files: [{ type: "inline", path: "/workspace/a", data: "not base64!" }] },
      400,
      "invalid_request_error",
    );
  });
});

describe("environments made ahead, and their files", () => {
  it("environments.create prepares one; a session attaches it (once); files are written and listed between turns", async () => {
    const info = await client.beta.agents.environments.create({
      environment: {
        type: "openai_hosted",
        files: [{ type: "inline", path: "/workspace/src/app.txt", data: b64("app v1\n") }],
        setup_commands: [{ command: "echo prepared-ahead > ready.txt" }],
        env: { AHEAD: "ahead-value" },
      },
    });
    expect(info).toMatchObject({
      object: "agent.environment",
      type: "openai_hosted",
      plugins: [],
      skills: [],
    });
    expect(["pending", "ready"]).toContain(info.status);
    const ready = await waitFor(
      async () => {
        const e = await client.beta.agents.environments.retrieve(info.id);
        return e.status === "ready" ? e : null;
      },
      30_000,
      "the environment to be ready",
    );
    expect(ready!.files).toEqual([
      { id: expect.any(String), type: "inline", path: "/workspace/src/app.txt", size_bytes: 7 },
    ]);
    const listed = [];
    for await (const e of client.beta.agents.environments.list()) listed.push(e.id);
    expect(listed).toContain(info.id);

    // Files: written into the environment, listed (paths, sizes), visible to the agent's commands.
    const written = await client.beta.agents.environments.files.create(info.id, {
      type: "inline",
      path: "/workspace/src/extra.txt",
      data: b64("written later\n"),
    });
    expect(written).toEqual({
      object: "agent.environment.file",
      environment_id: info.id,
      path: "/workspace/src/extra.txt",
      size_bytes: 14,
    });
    const page = await client.beta.agents.environments.files.list(info.id, {
      path: "/workspace/src",
      order: "asc",
    });
    expect(page.data.map((x) => [x.path, x.size_bytes])).toEqual([
      ["/workspace/src/app.txt", 7],
      ["/workspace/src/extra.txt", 14],
    ]);
    const all: string[] = [];
    for await (const x of client.beta.agents.environments.files.list(info.id, { limit: 1, order: "asc" }))
      all.push(x.path);
    expect(all).toEqual(["/workspace/ready.txt", "/workspace/src/app.txt", "/workspace/src/extra.txt"]);
    expectApiError(
      await rejection(
        client.beta.agents.environments.files.create(info.id, {
          type: "file_id",
          file_id: "file_1",
          path: "/workspace/x",
        }),
      ),
      NotFoundError,
      404,
    );
    expectApiError(
      await rejection(
        client.beta.agents.environments.files.create(info.id, { type: "inline", path: "/etc/x", data: "" }),
      ),
      BadRequestError,
      400,
    );

    const s = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: { type: "openai_hosted", environment_id: info.id } as never,
    });
    expect((s.environment as { id: string }).id).toBe(info.id);
    await client.beta.agents.sessions
      .stream(s.id, {
        input: shell('cat ready.txt src/app.txt src/extra.txt > seen.txt; echo "$AHEAD" >> seen.txt'),
      })
      .finalResult();
    expect(await workspaceFile(s.id, "seen.txt")).toBe(
      "prepared-ahead\napp v1\nwritten later\nahead-value\n",
    );
    expect((await client.beta.agents.environments.retrieve(info.id)).status).toBe("connected");

    const twice = await rejection(
      client.beta.agents.sessions.create({
        agent: { model: "mock-model" },
        environment: { type: "openai_hosted", environment_id: info.id } as never,
      }),
    );
    expect(expectApiError(twice, ConflictError, 409).code).toBe("environment_in_use");
    expectApiError(
      await rejection(
        client.beta.agents.sessions.create({
          agent: { model: "mock-model" },
          environment: { type: "openai_hosted", environment_id: info.id, files: [] } as never,
        }),
      ),
      BadRequestError,
      400,
    );

    // Deleting the session expires its environment.
    await client.beta.agents.sessions.delete(s.id);
    expect((await client.beta.agents.environments.retrieve(info.id)).status).toBe("expired");
    expectApiError(await rejection(client.beta.agents.environments.retrieve("env_nope")), NotFoundError, 404);
  });
});

describe("self_hosted", () => {
  it("keeps its meaning (this server's workspace) and may use a directory inside the roots the operator allows", async () => {
    const plain = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: { type: "self_hosted", workspace_directory: "/workspace" },
    });
    // Its own directory on this host, which clients see as /workspace (the official default).
    expect((plain.environment as { workspace_directory: string }).workspace_directory).toBe("/workspace");
    const shared = join(f.workspace, "projects", "demo");
    mkdirSync(shared, { recursive: true });
    const s = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: { type: "self_hosted", workspace_directory: shared },
    });
    expect((s.environment as { workspace_directory: string }).workspace_directory).toBe(shared);
    await client.beta.agents.sessions.stream(s.id, { input: shell("pwd > where.txt") }).finalResult();
    // (A container sees the directory at /workspace.)
    expect(await workspaceFile(s.id, "where.txt")).toBe(onContainerBackend ? "/workspace\n" : `${shared}\n`);
    // A directory the client chose is where its files are, to the client too.
    const listed = [];
    for await (const a of client.beta.agents.sessions.artifacts.list(s.id)) listed.push(a);
    expect(listed.map((a) => a.path)).toEqual([join(shared, "where.txt")]);

    const deny = async (
      dir: string,
      cls: typeof PermissionDeniedError | typeof BadRequestError,
      status: number,
    ) =>
      expectApiError(
        await rejection(
          client.beta.agents.sessions.create({
            agent: { model: "mock-model" },
            environment: { type: "self_hosted", workspace_directory: dir },
          }),
        ),
        cls,
        status,
      );
    await deny("/etc", PermissionDeniedError, 403);
    await deny(f.workspace, PermissionDeniedError, 403);
    await deny(f.dataDir, PermissionDeniedError, 403);
    await deny(await f.workspaceOf(plain.id), PermissionDeniedError, 403);
    await deny(join(f.workspace, "missing"), BadRequestError, 400);
  });
});

// The application layer on its own (no HTTP, no engine: stub engines, an in-memory store): what it decides once
// for both dialects — the tool policy before anything is stored, where a session works, what is given back when a
// session cannot be made, where a stream starts, and who holds a session.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { type Application, createApplication } from "../../src/application/index.js";
import { loadConfig } from "../../src/config/load.js";
import { ApiError } from "../../src/kernel/errors.js";
import { type Core, createCore } from "../../src/main/compose.js";
import { parseInput } from "../../src/model/input.js";
import { defaultScope } from "../../src/model/scope.js";
import { lockOf, newRestoreLock, turnHolding } from "../../src/model/session-lock.js";
import { SqliteStore } from "../../src/store/sqlite/index.js";
import { stubEngines } from "../support/fixture.js";

const dirs: string[] = [];
const cores: Core[] = [];
afterEach(async () => {
  for (const c of cores.splice(0)) await c.store.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function build(args: string[] = []): { app: Application; core: Core } {
  const dataDir = mkdtempSync(join(tmpdir(), "cas-application-"));
  dirs.push(dataDir);
  const config = loadConfig(["--port", "0", "--data-dir", dataDir, ...args], {}, dataDir);
  mkdirSync(config.workspaceRoot, { recursive: true });
  const core = createCore(config, {
    store: SqliteStore.open(":memory:"),
    engines: stubEngines(),
    logger: pino({ level: "silent" }),
  });
  cores.push(core);
  return { app: createApplication(core, { resource: { attributes: {} } as never }), core };
}

const stdioServer = {
  type: "mcp",
  server_label: "local",
  transport: { type: "stdio", command: "/bin/true" },
};

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe("sessions (application)", () => {
  it("refuses a stdio MCP server before anything is stored, in both dialects' strictness; allowed by the operator it is kept", async () => {
    const { app, core } = build();
    for (const strict of [true, false]) {
      const e = await refusal(
        app.sessions.create(defaultScope, {
          fields: { tools: { raw: [stdioServer], strict, where: "agent.tools" } },
          dialectDefault: "session",
          input: null,
        }),
      );
      expect(e.kind).toBe("bad_request");
      expect(e.message).toContain("agent.tools");
    }
    expect(await core.store.countSessions()).toBe(0);
    const agents = await refusal(
      app.agents.create(defaultScope, { model: "m", tools: { raw: [stdioServer], strict: true } }),
    );
    expect(agents.kind).toBe("bad_request");
    expect((await core.store.listAgents({ project_id: defaultScope.projectId })).data).toEqual([]);

    const allowed = build(["--allow-mcp-stdio"]);
    const { session } = await allowed.app.sessions.create(defaultScope, {
      fields: { tools: { raw: [stdioServer], strict: true } },
      dialectDefault: "session",
      input: null,
    });
    expect(session.tools).toEqual([expect.objectContaining({ type: "mcp", server_label: "local" })]);
  });

  it("works where the environment says, else the request, else the operator's mode, else the dialect's default", async () => {
    const workspaceOf = async (
      app: Application,
      n: { workspace?: "shared" | "session"; dialectDefault: "shared" | "session" },
    ) =>
      (await app.sessions.create(defaultScope, { fields: {}, input: null, ...n })).session.extra
        .workspace_mode;
    const auto = build().app;
    expect(await workspaceOf(auto, { dialectDefault: "session" })).toBe("session");
    expect(await workspaceOf(auto, { dialectDefault: "shared" })).toBe("shared");
    expect(await workspaceOf(auto, { dialectDefault: "shared", workspace: "session" })).toBe("session");
    const shared = build(["--workspace-mode", "shared"]).app;
    expect(await workspaceOf(shared, { dialectDefault: "session" })).toBe("shared");
    expect(await workspaceOf(shared, { dialectDefault: "session", workspace: "session" })).toBe("session");
    // An openai_hosted environment always gets a directory of its own, whatever was asked.
    const { session } = await shared.sessions.create(defaultScope, {
      fields: {},
      official: { environment: { type: "openai_hosted" }, vaultIds: [] },
      workspace: "shared",
      dialectDefault: "shared",
      input: null,
    });
    expect(session.extra.workspace_mode).toBe("session");
    expect(session.extra.environment).toBe("openai_hosted");
  });

  it("gives back an environment made ahead when the session cannot be made: another session attaches it", async () => {
    const { app, core } = build(["--max-sessions", "1"]);
    const plan = await app.planEnvironmentAhead(defaultScope, { type: "openai_hosted" }, []);
    const env = await app.environments.createAhead(defaultScope, plan);
    const first = await app.sessions.create(defaultScope, {
      fields: {},
      dialectDefault: "session",
      input: null,
    });
    const attach = () =>
      app.sessions.create(defaultScope, {
        fields: {},
        official: { environment: { type: "openai_hosted", environment_id: env.id }, vaultIds: [] },
        dialectDefault: "session",
        input: null,
      });
    const full = await refusal(attach());
    expect(full.kind).toBe("capacity");
    // Not left reserved by the session that could not be made.
    expect((await core.store.getEnvironment(env.id))?.session_id ?? null).toBeNull();
    await app.sessions.delete(defaultScope, first.session.id, { whileRunning: "refuse" });
    const { session } = await attach();
    expect(session.extra.environment_id).toBe(env.id);
    expect(session.workspace).toBe(env.directory);
  });

  it("refuses to delete a session a turn holds when asked to, and refuses a message while a restore holds it", async () => {
    const { app, core } = build();
    const { session } = await app.sessions.create(defaultScope, {
      fields: {},
      dialectDefault: "session",
      input: null,
    });
    await core.store.updateSession(session.id, { active_turn_id: "turn_0123" });
    const busy = await refusal(app.sessions.delete(defaultScope, session.id, { whileRunning: "refuse" }));
    expect(busy.kind).toBe("conflict");
    expect(busy.code).toBe("session_busy");
    const restore = newRestoreLock();
    await core.store.updateSession(session.id, { active_turn_id: restore.id });
    const held = await app.sessions.get(defaultScope, session.id);
    expect(app.sessions.busy(held)).toBe(true);
    const e = await refusal(app.sessions.send(held, parseInput("hi"), { whileBusy: "steer" }));
    expect(e.message).toContain("checkpoint is being restored");
  });
});

describe("streams (application)", () => {
  it("starts at the log's end when idle, before the running turn's first event, or at the end while the turn has logged nothing", async () => {
    const { app, core } = build();
    const { session } = await app.sessions.create(defaultScope, {
      fields: {},
      dialectDefault: "session",
      input: null,
    });
    const end = await app.streams.position(session.id);
    expect(end).toBeGreaterThan(0); // session.created
    expect(await app.streams.start(session)).toEqual({ state: "idle", seq: end });
    expect(await app.streams.start({ ...session, active_turn_id: "turn_none" })).toEqual({
      state: "turn",
      turnId: "turn_none",
      seq: end,
    });
    await core.hub.commit(session.id, async (_tx, log) => {
      log(
        { type: "item.delta", data: { item_id: "i", output_index: 0, kind: "agent_message", delta: "hi" } },
        { turn_id: "turn_x" },
      );
    });
    expect(await app.streams.position(session.id)).toBe(end + 1);
    expect(await app.streams.start({ ...session, active_turn_id: "turn_x" })).toEqual({
      state: "turn",
      turnId: "turn_x",
      seq: end,
    });
  });
});

describe("session lock", () => {
  it("tells a turn from a restore by the stored claim, and nobody from an empty one", () => {
    const restore = newRestoreLock();
    expect(restore.kind).toBe("restore");
    expect(lockOf(restore.id)).toEqual(restore);
    expect(lockOf("turn_abc")).toEqual({ kind: "turn", id: "turn_abc" });
    expect(lockOf(null)).toBeNull();
    expect(turnHolding({ active_turn_id: restore.id })).toBeNull();
    expect(turnHolding({ active_turn_id: "turn_abc" })).toBe("turn_abc");
  });
});

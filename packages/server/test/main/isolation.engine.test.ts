// What an agent's commands can reach, proven from inside real turns: not the server's secrets (model key, service
// token, database URL, anything else in its environment), not the data directory (database, engine state), not
// another session's workspace — only their own. The server runs as users run it (the CLI), with secrets in its
// environment and the model outside it (the engine needs the key to reach it).
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MockResponsesServer, scriptedModel } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliServer, startCliServer } from "../support/cli-process.js";
import { cleanup } from "../support/fixture.js";
import { hostWorkspaceOf, onContainerBackend } from "../support/sandbox.js";

const SECRETS = {
  OPENAI_API_KEY: "sk-isolation-model-key-4a1f",
  AGENT_API_TOKEN: "isolation-service-token-77e2",
  // (not DATABASE_URL: the server would use it; it is kept from agents the same way)
  ANALYTICS_DATABASE_URL: "postgres://agent:db-password-91c3@db.internal/prod",
  SOME_OTHER_SECRET: "other-secret-value-5d0b",
};

describe("agent commands are isolated", () => {
  let dir: string;
  let dataDir: string;
  let mock: MockResponsesServer;
  let server: CliServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cas-isolation-"));
    dataDir = join(dir, "data");
    mock = await MockResponsesServer.start({ fallback: scriptedModel() });
    server = await startCliServer(dataDir, [], SECRETS, { modelUrl: mock.url });
  });
  afterAll(async () => {
    server?.child.kill("SIGTERM");
    await server?.exited;
    await mock?.close();
    cleanup(dir);
  });

  const headers = {
    "content-type": "application/json",
    "openai-beta": "agents=v1",
    authorization: `Bearer ${SECRETS.AGENT_API_TOKEN}`,
  };
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(server.url + path, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    expect(res.status, text).toBeLessThan(300);
    return (text ? JSON.parse(text) : {}) as T;
  };

  /** Runs `command` in a turn of the session and returns what it printed (the command item's output). */
  async function run(sessionId: string, command: string): Promise<{ output: string; exit: number | null }> {
    const before = await api<{ data: unknown[] }>("GET", `/v1/agents/sessions/${sessionId}/turns`);
    await api("POST", `/v1/agents/sessions/${sessionId}/events`, {
      events: [
        {
          type: "agent.session.input.message",
          input: `Run this exact shell command and wait for it to finish: ${command}. Then reply with exactly: ran`,
        },
      ],
    });
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
      const turns = await api<{ data: Array<{ id: string; status: string }> }>(
        "GET",
        `/v1/agents/sessions/${sessionId}/turns`,
      );
      const turn = turns.data[0];
      if (turns.data.length > before.data.length && turn && turn.status !== "in_progress") {
        expect(turn.status).toBe("completed");
        const items = await api<{
          data: Array<{ type: string; output?: string | null; exit_code?: number | null }>;
        }>("GET", `/v1/agents/sessions/${sessionId}/turns/${turn.id}/items?order=asc`);
        const cmd = items.data.find((i) => i.type === "command_execution");
        expect(cmd, "the command ran").toBeTruthy();
        return { output: cmd!.output ?? "", exit: cmd!.exit_code ?? null };
      }
      await new Promise((r) => setImmediate(r));
    }
    throw new Error("the turn did not end");
  }

  it("commands see none of the server's secrets (env, /proc/self/environ, /proc/1/environ)", async () => {
    const { id } = await api<{ id: string }>("POST", "/v1/agents/sessions", {
      agent: { model: "mock-model" },
    });
    const { output } = await run(
      id,
      "env; echo ===; tr '\\0' '\\n' < /proc/self/environ; echo ===; tr '\\0' '\\n' < /proc/1/environ; echo ===; " +
        "cat /proc/$PPID/environ | tr '\\0' '\\n'; echo end-of-env",
    );
    expect(output).toContain("end-of-env");
    expect(output).toMatch(/^PATH=/m);
    for (const [name, value] of Object.entries(SECRETS)) {
      expect(output, name).not.toContain(value);
      expect(output, name).not.toMatch(new RegExp(`^${name}=`, "m"));
    }
    expect(output).not.toMatch(/^CODEX_HOME=/m);
  });

  it("commands cannot read the data directory or another session's workspace, nor write there", async () => {
    const a = await api<{ id: string; environment: { workspace_directory: string } }>(
      "POST",
      "/v1/agents/sessions",
      {
        agent: { model: "mock-model" },
      },
    );
    const b = await api<{ id: string; environment: { workspace_directory: string } }>(
      "POST",
      "/v1/agents/sessions",
      {
        agent: { model: "mock-model" },
      },
    );
    // Clients see each one's files at /workspace; on this host they are the sessions' own directories.
    expect([a.environment.workspace_directory, b.environment.workspace_directory]).toEqual([
      "/workspace",
      "/workspace",
    ]);
    const wsA = hostWorkspaceOf(dataDir, a.id);
    const wsB = hostWorkspaceOf(dataDir, b.id);
    // B keeps a private file in its workspace (written by its own command: that works).
    const own = await run(b.id, "echo b-private-content > private.txt && cat private.txt && pwd");
    expect(own.output).toContain("b-private-content");
    // (A container sees its workspace at /workspace.)
    expect(own.output).toContain(onContainerBackend ? "/workspace" : wsB);

    const probe = await run(
      a.id,
      [
        `head -c 16 ${join(dataDir, "agents.db")}; echo "db=$?"`,
        `ls ${join(dataDir, "codex-home")}; echo "home=$?"`,
        `ls ${wsB}; echo "ls-b=$?"`,
        `cat ${join(wsB, "private.txt")}; echo "cat-b=$?"`,
        `echo pwned > ${join(wsB, "evil.txt")}; echo "write-b=$?"`,
        `echo mine > own.txt && cat own.txt; echo "own=$?"`,
      ].join("; "),
    );
    const out = probe.output;
    expect(out).not.toContain("SQLite format");
    expect(out).toMatch(/db=[1-9]/);
    expect(out).toMatch(/home=[1-9]/);
    expect(out).toMatch(/ls-b=[1-9]/);
    expect(out).not.toContain("b-private-content");
    expect(out).toMatch(/cat-b=[1-9]/);
    expect(out).toMatch(/write-b=[1-9]/);
    expect(existsSync(join(wsB, "evil.txt"))).toBe(false);
    // Its own workspace is fully usable.
    expect(out).toContain("mine");
    expect(out).toMatch(/own=0/);
    expect(existsSync(join(wsA, "own.txt"))).toBe(true);
  });
});

// The outbound guard checked again later, on a running service: an HTTP MCP server stored while the operator allowed
// private targets is refused when each turn starts, a token endpoint when the service refreshes a token (refused after
// the operator stopped allowing them). Nothing here connects outside this machine. (Refused and accepted when
// registered, on the HTTP app alone: outbound-targets.test.ts.)
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type McpHttpServer, startMcpHttpServer } from "@codex-agent-api/testkit";
import type OpenAI from "openai";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/load.js";
import { type Service, startService } from "../../../src/main/service.js";
import { cleanup, readSse } from "../../support/fixture.js";
import { rejection, sdk } from "../../support/openai-helpers.js";

const FLAG = /unless its operator allows it \(--allow-private-targets\)/;

const mcpTool = (url: string) => ({
  type: "mcp" as const,
  server_label: "docs",
  transport: { type: "http" as const, server_url: url },
});

const oauth = (tokenEndpoint: string, mcpUrl = "https://mcp.example.com/mcp") => ({
  type: "mcp_oauth" as const,
  access_token: "stale-access-token",
  mcp_server_url: mcpUrl,
  // About to expire: the next thread that gets it refreshes it first.
  expires_at: new Date(Date.now() + 30_000).toISOString(),
  refresh: {
    client_id: "client-1",
    refresh_token: "refresh-1",
    token_endpoint: tokenEndpoint,
    token_endpoint_auth: { type: "none" as const },
  },
});

/** The real service with its logs kept (to see what a refused background request says). */
interface Logged {
  service: Service;
  client: OpenAI;
  logs: () => string;
  stop(): Promise<void>;
}

async function startLogged(dataDir: string, args: string[]): Promise<Logged> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const config = loadConfig(["--mock-model", "--port", "0", "--data-dir", dataDir, ...args], {}, dataDir);
  const service = await startService(config, { logger: pino({ level: "debug" }, sink), mockCapture: true });
  const client = sdk({ url: service.url });
  return { service, client, logs: () => lines.join(""), stop: () => service.stop() };
}

describe("checked again later: targets stored while private ones were allowed, refused after", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "cas-outbound-"));
  let mcp: McpHttpServer;
  let tokenEndpoint: Server;
  let tokenPort: number;
  const tokenRequests: string[] = [];
  let agentId: string;
  let vaultId: string;
  let s: Logged;

  beforeAll(async () => {
    mcp = await startMcpHttpServer();
    tokenEndpoint = createServer((req, res) => {
      tokenRequests.push(req.url ?? "");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ access_token: "fresh", expires_in: 3600 }));
    });
    await new Promise<void>((r) => tokenEndpoint.listen(0, "127.0.0.1", r));
    tokenPort = (tokenEndpoint.address() as AddressInfo).port;

    // Stored while the operator allowed private targets; a turn reaches the MCP server then.
    const before = await startLogged(dataDir, ["--allow-private-targets"]);
    try {
      const agent = await before.client.beta.agents.create({
        model: "mock-model",
        tools: [mcpTool(mcp.url)] as never,
      });
      agentId = agent.id;
      const vault = await before.client.beta.agents.vaults.create({});
      vaultId = vault.id;
      await before.client.beta.agents.vaults.credentials.create(vault.id, {
        name: "oauth",
        // (Its MCP server URL is no tool's: only the refresh matters here.)
        auth: oauth(`http://127.0.0.1:${tokenPort}/token`, "https://mcp.example.com/mcp") as never,
      });
      const session = await before.client.beta.agents.sessions.create({
        agent_id: agentId,
        environment: { type: "none" },
      });
      const done = await before.client.beta.agents.sessions
        .stream(session.id, {
          input:
            'Call the MCP tool echo on server docs with arguments {"text":"allowed"}. Then reply with its output',
        })
        .finalResult();
      expect(done.output_text).toBe("allowed");
    } finally {
      await before.stop();
    }
    // The operator no longer allows private targets.
    s = await startLogged(dataDir, []);
  });
  afterAll(async () => {
    await s?.stop();
    await mcp?.close();
    tokenEndpoint?.closeAllConnections();
    await new Promise<void>((r) => tokenEndpoint?.close(() => r()));
    cleanup(dataDir);
  });

  it("an HTTP MCP server: the turn fails with mcp_server_refused before the engine connects or the model is asked", async () => {
    const reached = mcp.requests.length;
    expect(reached).toBeGreaterThan(0);
    const text = "Reply with exactly: never";
    const res = await fetch(`${s.service.url}/v1/agents/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent_id: agentId, input: text, stream: true }),
    });
    const events = await readSse(res);
    expect(events.at(-1)).toMatchObject({
      event: "agent.session.turn.failed",
      data: { error: { code: "mcp_server_refused" } },
    });
    const message = (events.at(-1)!.data as { error: { message: string } }).error.message;
    expect(message).toMatch(/^MCP server docs is refused: 127\.0\.0\.1 is a loopback address/);
    expect(message).toMatch(FLAG);
    // The official dialect says the same of its turn.
    const official = await s.client.beta.agents.sessions.create({
      agent_id: agentId,
      environment: { type: "none" },
    });
    await rejection(s.client.beta.agents.sessions.stream(official.id, { input: text }).finalResult());
    const turns = await s.client.beta.agents.sessions.turns.list(official.id);
    expect(turns.data[0]).toMatchObject({ status: "failed" });
    expect(turns.data[0]!.error!.message).toMatch(/MCP server docs is refused: 127\.0\.0\.1 is a loopback/);
    expect(mcp.requests.length).toBe(reached);
    expect(s.service.mock!.requests().some((r) => r.lastUserText() === text)).toBe(false);
  });

  it("an mcp_oauth token endpoint: the refresh is refused when connecting, nothing is sent to it", async () => {
    expect(tokenRequests).toEqual([]);
    const session = await s.client.beta.agents.sessions.create({
      environment: { type: "none" },
      vault_ids: [vaultId],
    });
    const done = await s.client.beta.agents.sessions
      .stream(session.id, { input: "Reply with exactly: still runs" })
      .finalResult();
    // The turn runs (with the stored token); the refresh was attempted and refused.
    expect(done.output_text).toBe("still runs");
    const refused = s
      .logs()
      .split("\n")
      .filter((l) => l.includes("OAuth token refresh failed"));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(
      /the token endpoint could not be reached: 127\.0\.0\.1 is a loopback address.*--allow-private-targets/,
    );
    expect(tokenRequests).toEqual([]);
  });
});

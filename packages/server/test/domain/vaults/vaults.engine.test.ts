// Vaults and credentials, with the real engine, the scripted model and the testkit's MCP server, through the official
// npm SDK: CRUD without secrets, a credential reaching its MCP server's Authorization header (and nowhere else: not
// in responses, streams, logs, the data directory or the engine's files), OAuth refresh, ambiguity, key rotation,
// environment-variable credentials (refused, or behind the operator's flag), another project's vaults.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type McpHttpServer, startMcpHttpServer } from "@codex-agent-api/testkit";
import OpenAI, { BadRequestError, NotFoundError, UnprocessableEntityError } from "openai";
import type { AgentSessionEvent } from "openai/resources/beta/agents/agents";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/load.js";
import { type Service, startService } from "../../../src/main/service.js";
import {
  commandOutputs,
  everythingAbout,
  filesContaining,
  sha256,
  shell,
} from "../../support/environment-helpers.js";
import { waitFor } from "../../support/fixture.js";
import { expectApiError, rejection } from "../../support/openai-helpers.js";

/** A server whose logs (every level) are kept, to look for secrets in them. */
interface LoggedServer {
  service: Service;
  client: OpenAI;
  dataDir: string;
  logs: () => string;
  stop(): Promise<void>;
}

async function startLogged(
  opts: { dataDir?: string; env?: Record<string, string>; args?: string[]; apiKey?: string } = {},
): Promise<LoggedServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "cas-vaults-"));
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  // The tests' MCP servers and token endpoints listen on 127.0.0.1: private targets allowed (refused otherwise:
  // platform/net/outbound-targets.engine.test.ts).
  const config = loadConfig(
    ["--mock-model", "--port", "0", "--data-dir", dataDir, "--allow-private-targets", ...(opts.args ?? [])],
    { ...opts.env },
  );
  const service = await startService(config, { logger: pino({ level: "trace" }, sink), mockCapture: true });
  const client = new OpenAI({ baseURL: `${service.url}/v1`, apiKey: opts.apiKey ?? "test", maxRetries: 0 });
  return { service, client, dataDir, logs: () => lines.join(""), stop: () => service.stop() };
}

const mcpTool = (label: string, url: string, extra: Record<string, unknown> = {}) => ({
  type: "mcp" as const,
  server_label: label,
  transport: { type: "http" as const, server_url: url, ...extra },
});

/** Runs one MCP tool call in a new session with these vaults; returns the session id and its stream's events. */
async function callTool(
  client: OpenAI,
  vaultIds: string[],
  tools: unknown[],
  text: string,
): Promise<{ id: string; events: AgentSessionEvent[] }> {
  const stream = await client.beta.agents.sessions.create({
    agent: { model: "mock-model", tools: tools as never },
    environment: { type: "none" },
    vault_ids: vaultIds,
    input: text,
    stream: true,
  });
  const events: AgentSessionEvent[] = [];
  for await (const e of stream) events.push(e);
  const created = events.find((e) => e.type === "agent.session.created") as { session: { id: string } };
  return { id: created.session.id, events };
}

const echo = (label: string, text: string) =>
  `Call the MCP tool echo on server ${label} with arguments {"text":"${text}"}. Then reply with its output`;

const toolCalls = (mcp: McpHttpServer) => mcp.requests.filter((r) => r.method === "tools/call");

let s: LoggedServer;
let mcp: McpHttpServer;

beforeAll(async () => {
  s = await startLogged();
  mcp = await startMcpHttpServer();
});
afterAll(async () => {
  await s?.stop();
  await mcp?.close();
  if (s) rmSync(s.dataDir, { recursive: true, force: true });
});

describe("vaults and credentials", () => {
  it("CRUD; secrets are write-only (never in a response)", async () => {
    const { client } = s;
    const v = await client.beta.agents.vaults.create({ name: "  team vault  ", metadata: { team: "blue" } });
    expect(v).toMatchObject({ object: "vault", name: "team vault", metadata: { team: "blue" } });
    expect(v.id).toMatch(/^vault_/);
    const secret = `bearer-${randomBytes(12).toString("hex")}`;
    const c = await client.beta.agents.vaults.credentials.create(v.id, {
      name: "docs server",
      auth: { type: "static_bearer", token: secret, mcp_server_url: "https://mcp.example.com/mcp" },
      metadata: { env: "prod" },
    });
    expect(c).toMatchObject({
      object: "vault.credential",
      vault_id: v.id,
      name: "docs server",
      metadata: { env: "prod" },
      auth: { type: "static_bearer", mcp_server_url: "https://mcp.example.com/mcp" },
    });
    const oauthSecrets = {
      access: `access-${randomBytes(8).toString("hex")}`,
      refresh: `refresh-${randomBytes(8).toString("hex")}`,
      client: `client-${randomBytes(8).toString("hex")}`,
    };
    const o = await client.beta.agents.vaults.credentials.create(v.id, {
      name: "oauth",
      auth: {
        type: "mcp_oauth",
        access_token: oauthSecrets.access,
        mcp_server_url: "https://other.example.com/mcp",
        expires_at: "2030-01-01T00:00:00Z",
        refresh: {
          client_id: "client-1",
          refresh_token: oauthSecrets.refresh,
          token_endpoint: "https://auth.example.com/token",
          token_endpoint_auth: { type: "client_secret_basic", client_secret: oauthSecrets.client },
          scope: "read",
        },
      },
    });
    expect(o.auth).toEqual({
      type: "mcp_oauth",
      mcp_server_url: "https://other.example.com/mcp",
      expires_at: "2030-01-01T00:00:00Z",
      refresh: {
        client_id: "client-1",
        token_endpoint: "https://auth.example.com/token",
        token_endpoint_auth: { type: "client_secret_basic" },
        resource: null,
        scope: "read",
      },
    });
    const rotated = await client.beta.agents.vaults.credentials.update(c.id, {
      vault_id: v.id,
      auth: { type: "static_bearer", token: `${secret}-2` },
      metadata: {},
    });
    expect(rotated.metadata).toEqual({});
    expect(rotated.updated_at).toBeGreaterThanOrEqual(c.updated_at);
    const renamed = await client.beta.agents.vaults.update(v.id, { name: null, metadata: { team: "red" } });
    expect(renamed).toMatchObject({ name: null, metadata: { team: "red" } });
    const listed = await client.beta.agents.vaults.credentials.list(v.id);
    expect(listed.data.map((x) => x.id)).toEqual([o.id, c.id]);
    const byMeta = await client.beta.agents.vaults.list({ metadata: { team: "red" } });
    expect(byMeta.data.map((x) => x.id)).toEqual([v.id]);
    expect((await client.beta.agents.vaults.list({ status: ["archived"] })).data).toEqual([]);
    const shown = JSON.stringify([
      c,
      o,
      rotated,
      listed.data,
      await client.beta.agents.vaults.credentials.retrieve(c.id, { vault_id: v.id }),
      await client.beta.agents.vaults.retrieve(v.id),
    ]);
    for (const x of [secret, oauthSecrets.access, oauthSecrets.refresh, oauthSecrets.client])
      expect(shown).not.toContain(x);

    // Changing a credential's kind, bad URLs, and environment variables (no --allow-env-credentials) are refused.
    expectApiError(
      await rejection(
        client.beta.agents.vaults.credentials.update(c.id, {
          vault_id: v.id,
          auth: { type: "mcp_oauth", access_token: "x" },
        }),
      ),
      BadRequestError,
      400,
    );
    expectApiError(
      await rejection(
        client.beta.agents.vaults.credentials.create(v.id, {
          name: "plain http",
          auth: { type: "static_bearer", token: "t", mcp_server_url: "http://mcp.example.com/mcp" },
        }),
      ),
      BadRequestError,
      400,
    );
    expectApiError(
      await rejection(
        client.beta.agents.vaults.credentials.create(v.id, {
          name: "header injection",
          auth: {
            type: "static_bearer",
            token: "a\r\nX-Evil: 1",
            mcp_server_url: "https://mcp.example.com/mcp",
          },
        }),
      ),
      BadRequestError,
      400,
    );
    const envVar = expectApiError(
      await rejection(
        client.beta.agents.vaults.credentials.create(v.id, {
          name: "api key",
          auth: {
            type: "environment_variable",
            secret_name: "SERVICE_API_KEY",
            secret_value: "v",
            networking: { type: "unrestricted" },
          },
        }),
      ),
      UnprocessableEntityError,
      422,
    );
    expect(envVar.code).toBe("unsupported_credential_type");

    expect(await client.beta.agents.vaults.credentials.delete(c.id, { vault_id: v.id })).toEqual({
      id: c.id,
      object: "vault.credential.deleted",
      deleted: true,
    });
    expect(await client.beta.agents.vaults.delete(v.id)).toEqual({
      id: v.id,
      object: "vault.deleted",
      deleted: true,
    });
    expectApiError(await rejection(client.beta.agents.vaults.retrieve(v.id)), NotFoundError, 404);
    expectApiError(
      await rejection(client.beta.agents.vaults.credentials.retrieve(o.id, { vault_id: v.id })),
      NotFoundError,
      404,
    );
    expect(filesContaining(s.dataDir, secret)).toEqual([]);
  });

  it("a session's vault gives the MCP server with the same URL its Authorization header, and nothing else sees it", async () => {
    const { client } = s;
    const token = `mcp-token-${randomBytes(16).toString("hex")}`;
    const v = await client.beta.agents.vaults.create({ name: "mcp" });
    await client.beta.agents.vaults.credentials.create(v.id, {
      name: "the test server",
      // The same URL written differently (trailing slash): matched after normalisation.
      auth: { type: "static_bearer", token, mcp_server_url: `${mcp.url}/` },
    });
    const before = toolCalls(mcp).length;
    const { id, events } = await callTool(
      client,
      [v.id],
      [mcpTool("docs", mcp.url)],
      echo("docs", "over MCP"),
    );
    const calls = toolCalls(mcp).slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.headers.authorization).toBe(`Bearer ${token}`);
    const session = await client.beta.agents.sessions.retrieve(id);
    expect(session.vault_ids).toEqual([v.id]);

    // Nowhere else: responses, the stream, the logs, the data directory (database, engine state, rollouts).
    expect(await everythingAbout(client, id)).not.toContain(token);
    for (const e of events) expect(JSON.stringify(e)).not.toContain(token);
    expect(s.logs()).not.toContain(token);
    expect(s.logs().length).toBeGreaterThan(0);
    expect(filesContaining(join(s.dataDir, "codex-home"), token)).toEqual([]);
    expect(filesContaining(s.dataDir, token)).toEqual([]);

    // A tool that gives the token back (whoami): what the session stores has it replaced (the engine's own
    // record of the conversation has it: the model saw it).
    const whoami = await client.beta.agents.sessions
      .stream(id, {
        input: "Call the MCP tool whoami on server docs with arguments {}. Then reply with its output",
      })
      .finalResult();
    expect(whoami.output_text).toBe("Bearer [redacted]");
    expect(await everythingAbout(client, id)).not.toContain(token);
    expect(filesContaining(s.dataDir, token).every((p) => p.startsWith(join(s.dataDir, "codex-home")))).toBe(
      true,
    );
  });

  it("an MCP server with its own authorization keeps it; two matching credentials fail the turn clearly", async () => {
    const { client } = s;
    const v = await client.beta.agents.vaults.create({});
    await client.beta.agents.vaults.credentials.create(v.id, {
      name: "one",
      auth: { type: "static_bearer", token: "from-vault-1", mcp_server_url: mcp.url },
    });
    const before = toolCalls(mcp).length;
    await callTool(
      client,
      [v.id],
      [mcpTool("own", mcp.url, { authorization: "own-token" })],
      echo("own", "x"),
    );
    expect(toolCalls(mcp).slice(before)[0]!.headers.authorization).toBe("Bearer own-token");

    const w = await client.beta.agents.vaults.create({});
    await client.beta.agents.vaults.credentials.create(w.id, {
      name: "two",
      auth: { type: "static_bearer", token: "from-vault-2", mcp_server_url: mcp.url },
    });
    const { events } = await callTool(client, [v.id, w.id], [mcpTool("docs", mcp.url)], echo("docs", "y"));
    const failed = events.find((e) => e.type === "agent.session.turn.failed") as {
      turn: { error: { message: string } };
    };
    expect(failed.turn.error.message).toMatch(/2 credentials of the session's vaults match the MCP server/);
    expectApiError(
      await rejection(
        client.beta.agents.sessions.create({
          agent: { model: "mock-model" },
          environment: { type: "none" },
          vault_ids: ["vault_missing"],
        }),
      ),
      NotFoundError,
      404,
    );
  });

  it("an OAuth token about to expire is refreshed at its token endpoint before the thread gets it", async () => {
    const { client } = s;
    const seen: Array<{ body: string; auth: string | undefined }> = [];
    const fresh = `fresh-${randomBytes(12).toString("hex")}`;
    const endpoint: Server = createServer((req: IncomingMessage, res) => {
      let body = "";
      req.on("data", (d) => {
        body += d;
      });
      req.on("end", () => {
        seen.push({ body, auth: req.headers.authorization });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            access_token: fresh,
            token_type: "Bearer",
            expires_in: 3600,
            refresh_token: "rotated-refresh",
          }),
        );
      });
    });
    await new Promise<void>((r) => endpoint.listen(0, "127.0.0.1", r));
    const port = (endpoint.address() as { port: number }).port;
    try {
      const v = await client.beta.agents.vaults.create({});
      const soon = new Date(Date.now() + 30_000).toISOString();
      const c = await client.beta.agents.vaults.credentials.create(v.id, {
        name: "oauth",
        auth: {
          type: "mcp_oauth",
          access_token: "stale-access-token",
          mcp_server_url: mcp.url,
          expires_at: soon,
          refresh: {
            client_id: "client-9",
            refresh_token: "refresh-secret-1",
            token_endpoint: `http://127.0.0.1:${port}/token`,
            token_endpoint_auth: { type: "client_secret_post", client_secret: "client-secret-1" },
            resource: "https://mcp.example.com",
          },
        },
      });
      const before = toolCalls(mcp).length;
      await callTool(client, [v.id], [mcpTool("docs", mcp.url)], echo("docs", "refreshed"));
      expect(toolCalls(mcp).slice(before)[0]!.headers.authorization).toBe(`Bearer ${fresh}`);
      expect(seen).toHaveLength(1);
      const form = new URLSearchParams(seen[0]!.body);
      expect(Object.fromEntries(form)).toEqual({
        grant_type: "refresh_token",
        refresh_token: "refresh-secret-1",
        client_id: "client-9",
        client_secret: "client-secret-1",
        resource: "https://mcp.example.com",
      });
      const after = await client.beta.agents.vaults.credentials.retrieve(c.id, { vault_id: v.id });
      expect(Date.parse((after.auth as { expires_at: string }).expires_at)).toBeGreaterThan(
        Date.now() + 3000_000,
      );
      // The next thread gets the refreshed token without another refresh (it is no longer about to expire).
      await callTool(client, [v.id], [mcpTool("docs", mcp.url)], echo("docs", "again"));
      expect(seen).toHaveLength(1);
      expect(toolCalls(mcp).at(-1)!.headers.authorization).toBe(`Bearer ${fresh}`);
      expect(s.logs()).not.toContain(fresh);
      expect(s.logs()).not.toContain("rotated-refresh");
    } finally {
      endpoint.closeAllConnections();
      await new Promise<void>((r) => endpoint.close(() => r()));
    }
  });
});

describe("key rotation", () => {
  it("a credential sealed with the old key works after rotation, is re-sealed with the new key, then needs only it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "cas-rotate-"));
    const k1 = randomBytes(32).toString("base64");
    const k2 = randomBytes(32).toString("base64");
    const token = `rotating-${randomBytes(12).toString("hex")}`;
    let server = await startLogged({ dataDir, env: { AGENT_SECRET_KEY: k1 } });
    try {
      const v = await server.client.beta.agents.vaults.create({});
      const c = await server.client.beta.agents.vaults.credentials.create(v.id, {
        name: "rotated",
        auth: { type: "static_bearer", token, mcp_server_url: mcp.url },
      });
      const sealedBefore = (await server.service.core.store.getVaultCredential(c.id))!.secret;
      expect(sealedBefore).not.toContain(token);
      await server.stop();

      // The new key, with the old one among the previous keys: the credential still opens.
      server = await startLogged({ dataDir, env: { AGENT_SECRET_KEY: k2, AGENT_SECRET_KEYS_PREVIOUS: k1 } });
      let before = toolCalls(mcp).length;
      await callTool(server.client, [v.id], [mcpTool("docs", mcp.url)], echo("docs", "after rotation"));
      expect(toolCalls(mcp).slice(before)[0]!.headers.authorization).toBe(`Bearer ${token}`);
      // Re-sealed with the new key at start-up (in the background).
      const store = server.service.core.store;
      const resealed = await waitFor(
        async () => {
          const now = (await store.getVaultCredential(c.id))!.secret;
          return now !== sealedBefore ? now : null;
        },
        15_000,
        "the credential to be re-sealed",
      );
      expect(resealed!.split(".")[1]).not.toBe(sealedBefore.split(".")[1]);
      await server.stop();

      // The old key can go now.
      server = await startLogged({ dataDir, env: { AGENT_SECRET_KEY: k2 } });
      before = toolCalls(mcp).length;
      await callTool(server.client, [v.id], [mcpTool("docs", mcp.url)], echo("docs", "new key only"));
      expect(toolCalls(mcp).slice(before)[0]!.headers.authorization).toBe(`Bearer ${token}`);
      await server.stop();

      // A server with neither key cannot open it: the turn fails, saying so, without the secret.
      server = await startLogged({ dataDir, env: { AGENT_SECRET_KEY: k1 } });
      const { events } = await callTool(server.client, [v.id], [mcpTool("docs", mcp.url)], echo("docs", "x"));
      const failed = events.find((e) => e.type === "agent.session.turn.failed") as {
        turn: { error: { message: string } };
      };
      expect(failed.turn.error.message).toMatch(/sealed with a key this instance does not have/);
      expect(JSON.stringify(events)).not.toContain(token);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("environment_variable credentials (--allow-env-credentials)", () => {
  it("the value is a variable of the agent's commands (and of setup), redacted from what the session stores", async () => {
    const server = await startLogged({ args: ["--allow-env-credentials"] });
    try {
      const { client } = server;
      const value = `sk-live-${randomBytes(16).toString("hex")}`;
      const v = await client.beta.agents.vaults.create({});
      const c = await client.beta.agents.vaults.credentials.create(v.id, {
        name: "service key",
        auth: {
          type: "environment_variable",
          secret_name: "SERVICE_API_KEY",
          secret_value: value,
          networking: { type: "limited", allowed_hosts: ["API.example.com"] },
        },
      });
      expect(c.auth).toEqual({
        type: "environment_variable",
        secret_name: "SERVICE_API_KEY",
        networking: { type: "limited", allowed_hosts: ["api.example.com"] },
      });
      const stream = await client.beta.agents.sessions.create({
        agent: { model: "mock-model" },
        environment: {
          type: "openai_hosted",
          setup_commands: [{ command: 'printf %s "$SERVICE_API_KEY" | sha256sum > setup-hash.txt' }],
        },
        vault_ids: [v.id],
        input: shell(
          'cat setup-hash.txt; printf %s "$SERVICE_API_KEY" | sha256sum; echo "key=$SERVICE_API_KEY"',
        ),
        stream: true,
      });
      const events: AgentSessionEvent[] = [];
      for await (const e of stream) events.push(e);
      const id = (events.find((e) => e.type === "agent.session.created") as { session: { id: string } })
        .session.id;
      const output = (await commandOutputs(client, id)).join("\n");
      expect(output.split(sha256(value)).length).toBe(3);
      expect(output).toContain("key=[redacted]");
      expect(await everythingAbout(client, id)).not.toContain(value);
      expect(JSON.stringify(events)).not.toContain(value);
      expect(server.logs()).not.toContain(value);
      // On disk only where the engine keeps the conversation (the model saw the output of `echo`): not in the
      // database, the setup log or the engine's configuration.
      const onDisk = filesContaining(server.dataDir, value);
      expect(onDisk.length).toBeGreaterThan(0);
      const home = join(server.dataDir, "codex-home");
      expect(onDisk.filter((p) => !p.startsWith(home) || p === join(home, "config.toml"))).toEqual([]);
    } finally {
      await server.stop();
      rmSync(server.dataDir, { recursive: true, force: true });
    }
  });
});

describe("projects", () => {
  it("another project's vaults, credentials, environments and templates are 404 and never listed", async () => {
    const server = await startLogged();
    try {
      const a = await server.service.core.keys.create("team-a");
      const b = await server.service.core.keys.create("team-b");
      const ca = new OpenAI({ baseURL: `${server.service.url}/v1`, apiKey: a.key, maxRetries: 0 });
      const cb = new OpenAI({ baseURL: `${server.service.url}/v1`, apiKey: b.key, maxRetries: 0 });
      const v = await ca.beta.agents.vaults.create({ name: "a's" });
      const c = await ca.beta.agents.vaults.credentials.create(v.id, {
        name: "a's token",
        auth: { type: "static_bearer", token: "a-token-value", mcp_server_url: mcp.url },
      });
      const t = await ca.beta.agents.environments.templates.create({ name: "a's template" });
      const e = await ca.beta.agents.environments.create({ environment: { type: "openai_hosted" } });
      for (const call of [
        () => cb.beta.agents.vaults.retrieve(v.id),
        () => cb.beta.agents.vaults.update(v.id, { name: "mine" }),
        () => cb.beta.agents.vaults.delete(v.id),
        () => cb.beta.agents.vaults.credentials.list(v.id),
        () => cb.beta.agents.vaults.credentials.retrieve(c.id, { vault_id: v.id }),
        () =>
          cb.beta.agents.vaults.credentials.create(v.id, {
            name: "x",
            auth: { type: "static_bearer", token: "x", mcp_server_url: mcp.url },
          }),
        () => cb.beta.agents.environments.templates.retrieve(t.id),
        () => cb.beta.agents.environments.templates.delete(t.id),
        () => cb.beta.agents.environments.retrieve(e.id),
        () => cb.beta.agents.environments.files.list(e.id),
        () =>
          cb.beta.agents.sessions.create({
            agent: { model: "mock-model" },
            environment: { type: "none" },
            vault_ids: [v.id],
          }),
        () =>
          cb.beta.agents.sessions.create({
            agent: { model: "mock-model" },
            environment: { type: "openai_hosted", environment_template_id: t.id },
          }),
        () =>
          cb.beta.agents.sessions.create({
            agent: { model: "mock-model" },
            environment: { type: "openai_hosted", environment_id: e.id } as never,
          }),
      ]) {
        expectApiError(await rejection(call()), NotFoundError, 404);
      }
      expect((await cb.beta.agents.vaults.list()).data).toEqual([]);
      expect((await cb.beta.agents.environments.list()).data).toEqual([]);
      expect((await cb.beta.agents.environments.templates.list()).data).toEqual([]);
      expect((await ca.beta.agents.vaults.list()).data.map((x) => x.id)).toEqual([v.id]);
      expect((await ca.beta.agents.vaults.retrieve(v.id)).name).toBe("a's");
    } finally {
      await server.stop();
      rmSync(server.dataDir, { recursive: true, force: true });
    }
  });
});

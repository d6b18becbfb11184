// The outbound guard where clients give the service somewhere to connect, on the HTTP app alone: webhook endpoints,
// HTTP MCP servers and `mcp_oauth` token endpoints are refused by default with a 400 in each dialect's error shape
// naming the field and why (every form of a non-public address, this machine's own name), and accepted with
// --allow-private-targets (or its former name --webhook-allow-private). Nothing here connects anywhere. (Checked again
// later, when a turn starts or a token is refreshed: outbound-targets.engine.test.ts.)
import { hostname } from "node:os";
import type OpenAI from "openai";
import { BadRequestError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppFixture, startApp } from "../../support/fixture.js";
import { expectApiError, rejection, sdk } from "../../support/openai-helpers.js";

/** Every refused form of a target (the examples and more), with what the refusal says. */
const REFUSED: Array<[string, RegExp]> = [
  ["http://[::7f00:1]:8443/mcp", /127\.0\.0\.1 \(IPv4-compatible\), a loopback address/],
  ["http://[::ffff:0:7f00:1]:8443/mcp", /127\.0\.0\.1 \(IPv4-translated\), a loopback address/],
  ["http://[::ffff:127.0.0.1]/mcp", /127\.0\.0\.1 \(IPv4-mapped\), a loopback address/],
  ["http://[::1]/mcp", /::1 is a loopback address/],
  ["http://0.0.0.0/mcp", /0\.0\.0\.0 is an unspecified address/],
  ["http://2130706433/", /127\.0\.0\.1 is a loopback address/],
  ["http://0x7f.1/", /127\.0\.0\.1 is a loopback address/],
  ["http://127.0.0.1:9/mcp", /127\.0\.0\.1 is a loopback address/],
  ["http://169.254.169.254/latest/meta-data", /169\.254\.169\.254 is a link-local address/],
  ["http://10.0.0.1/mcp", /10\.0\.0\.1 is a private address/],
  ["http://100.64.0.1/mcp", /100\.64\.0\.1 is a shared \(carrier-grade NAT\) address/],
  ["http://[fc00::1]/mcp", /fc00::1 is a unique local \(private\) address/],
  ["http://[fe80::1]/mcp", /fe80::1 is a link-local address/],
  ["http://localhost:8080/mcp", /localhost is a loopback name/],
  // This machine's own name resolves (through /etc/hosts) to a loopback or private address.
  [`http://${hostname()}:8080/mcp`, /resolves to \S+, a (loopback|private) address/],
];

const https = (url: string) => url.replace(/^http:/, "https:");

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

/** A 400 in the official shape naming `param`, saying why (and naming the operator's flag). */
async function refusedOfficial(call: Promise<unknown>, param: string, why: RegExp, what: string) {
  const e = expectApiError(await rejection(call), BadRequestError, 400);
  expect(e.param, what).toBe(param);
  expect(e.message, what).toContain(`'${param}': `);
  expect(e.message, what).toMatch(why);
  expect(e.message, what).toMatch(FLAG);
}

/** A 400 in the template shape (`{error, type}`), the message naming the field and why. */
async function refusedTemplate(
  res: Promise<{ status: number; body: { error?: string; type?: string } }>,
  field: string,
  why: RegExp,
  what: string,
) {
  const r = await res;
  expect(r.status, what).toBe(400);
  expect(r.body.type, what).toBe("ValueError");
  expect(r.body.error, what).toContain(`'${field}': `);
  expect(r.body.error, what).toMatch(why);
  expect(r.body.error, what).toMatch(FLAG);
}

describe("refused when registered (the default)", () => {
  // The HTTP app alone (no engine, no background workers: nothing is delivered or refreshed here).
  let f: AppFixture;
  let client: OpenAI;
  beforeAll(async () => {
    f = await startApp();
    client = sdk(f);
  });
  afterAll(async () => {
    await f.close();
  });

  it("HTTP MCP servers, official dialect: agents, sessions, automations (create and update)", async () => {
    const agent = await client.beta.agents.create({ model: "mock-model" });
    const session = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const param = "tools[0].transport.server_url";
    for (const [url, why] of REFUSED) {
      const tools = [mcpTool(url)] as never;
      await refusedOfficial(client.beta.agents.create({ model: "mock-model", tools }), param, why, url);
      await refusedOfficial(client.beta.agents.update(agent.id, { tools }), param, why, url);
      await refusedOfficial(
        client.beta.agents.sessions.create({ environment: { type: "none" }, agent: { tools } }),
        `agent.${param}`,
        why,
        url,
      );
      await refusedOfficial(
        client.beta.agents.sessions.update(session.id, { agent: { tools } } as never),
        `agent.${param}`,
        why,
        url,
      );
      await refusedOfficial(
        client.beta.agents.automations.create({
          type: "periodic",
          name: "x",
          expression: "0 9 * * *",
          timezone: "UTC",
          target: {
            type: "new_session",
            agent: { tools },
            environment: { type: "none" },
            input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }],
          },
        } as never),
        `target.agent.${param}`,
        why,
        url,
      );
    }
    // Nothing was stored on the way.
    expect((await client.beta.agents.retrieve(agent.id)).tools).toEqual([]);
    expect((await client.beta.agents.list()).data).toHaveLength(1);
    expect((await client.beta.agents.sessions.list()).data).toHaveLength(1);
  });

  it("HTTP MCP servers, template dialect: agents (create and update) and sessions, in the seed's form", async () => {
    const agent = await f.json<{ id: string }>("POST", "/v1/agents", { name: "a" });
    expect(agent.status).toBe(200);
    for (const [url, why] of REFUSED) {
      const tools = [{ type: "mcp", name: "docs", url }];
      await refusedTemplate(
        f.json("POST", "/v1/agents", { name: "b", tools }),
        "tools[0].server_url",
        why,
        url,
      );
      await refusedTemplate(
        f.json("POST", `/v1/agents/${agent.body.id}`, { tools }),
        "tools[0].server_url",
        why,
        url,
      );
      await refusedTemplate(
        f.json("POST", "/v1/agents/sessions", { agent: { tools } }),
        "agent.tools[0].server_url",
        why,
        url,
      );
      // The official form of the tool in the template dialect too.
      await refusedTemplate(
        f.json("POST", "/v1/agents/sessions", { agent: { tools: [mcpTool(url)] } }),
        "agent.tools[0].transport.server_url",
        why,
        url,
      );
    }
  });

  it("webhook endpoints (official dialect): create and update", async () => {
    // (An endpoint at a public address literal: accepted without resolving anything; subscribed to an event no
    // session here causes, and no worker runs in this app, so nothing is ever sent to it.)
    const endpoint = await client.webhooks.create({
      name: "public",
      url: "https://93.184.216.34/hooks",
      event_types: ["agent.environment.expired"],
    });
    try {
      for (const [url, why] of REFUSED.map(([u, w]) => [https(u), w] as const)) {
        await refusedOfficial(
          client.webhooks.create({ name: "x", url, event_types: ["agent.session.idle"] }),
          "url",
          why,
          url,
        );
        await refusedOfficial(client.webhooks.update(endpoint.id, { url }), "url", why, url);
      }
      expect((await client.webhooks.retrieve(endpoint.id)).url).toBe("https://93.184.216.34/hooks");
    } finally {
      await client.webhooks.delete(endpoint.id);
    }
  });

  it("mcp_oauth token endpoints (official dialect): the service itself would POST there", async () => {
    const vault = await client.beta.agents.vaults.create({ name: "v" });
    const param = "auth.refresh.token_endpoint";
    for (const [url, why] of [
      ...REFUSED.map(([u, w]) => [https(u), w] as const),
      // http is allowed on a loopback address only, and a loopback address only with the operator's flag.
      ["http://127.0.0.1:9/token", /127\.0\.0\.1 is a loopback address/] as const,
    ]) {
      await refusedOfficial(
        client.beta.agents.vaults.credentials.create(vault.id, { name: "o", auth: oauth(url) as never }),
        param,
        why,
        url,
      );
    }
    expect((await client.beta.agents.vaults.credentials.list(vault.id)).data).toEqual([]);
  });
});

describe("allowed with --allow-private-targets (and its former name)", () => {
  for (const flag of ["--allow-private-targets", "--webhook-allow-private"]) {
    it(`${flag}: the same targets are accepted`, async () => {
      const f = await startApp({ args: [flag] });
      try {
        const client = sdk(f);
        const agent = await client.beta.agents.create({
          model: "mock-model",
          tools: [mcpTool("http://[::ffff:127.0.0.1]:9/mcp"), mcpTool(`http://${hostname()}:9/mcp`)] as never,
        });
        expect(agent.tools).toHaveLength(2);
        const template = await f.json("POST", "/v1/agents", {
          tools: [{ type: "mcp", name: "docs", url: "http://169.254.169.254/mcp" }],
        });
        expect(template.status).toBe(200);
        const vault = await client.beta.agents.vaults.create({});
        await client.beta.agents.vaults.credentials.create(vault.id, {
          name: "o",
          auth: oauth("http://127.0.0.1:9/token") as never,
        });
        const hook = await client.webhooks.create({
          name: "local",
          url: "https://[::7f00:1]:9/hooks",
          event_types: ["agent.environment.expired"],
        });
        await client.webhooks.delete(hook.id);
      } finally {
        await f.close();
      }
    });
  }
});

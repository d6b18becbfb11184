import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { mcpStdioServerPath, startMcpHttpServer } from "../src/index.js";

type ToolResult = { content: Array<{ type: string; text: string }>; isError?: boolean };

async function exercise(client: Client) {
  const { tools } = await client.listTools();
  const call = async (name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as ToolResult;
  return {
    names: tools.map((t) => t.name).sort(),
    echo: await call("echo", { text: "hi" }),
    add: await call("add", { a: 2, b: 3 }),
    fail: await call("fail"),
    whoami: await call("whoami"),
  };
}

describe("test MCP servers (official SDK client)", () => {
  it("streamable HTTP: default tools; every request is recorded with its headers", async () => {
    const server = await startMcpHttpServer();
    const client = new Client({ name: "t", version: "0" });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers: { Authorization: "Bearer xyz" } },
        }),
      );
      const got = await exercise(client);
      expect(got.names).toEqual(["add", "ask", "echo", "fail", "whoami"]);
      expect(got.echo).toEqual({ content: [{ type: "text", text: "hi" }] });
      expect(got.add.content[0]!.text).toBe("5");
      expect(got.fail).toMatchObject({ isError: true });
      expect(got.whoami.content[0]!.text).toBe("Bearer xyz");
      const posted = server.requests.filter((r) => r.method !== undefined);
      expect(posted.map((r) => r.method)).toEqual([
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "tools/call",
        "tools/call",
        "tools/call",
      ]);
      expect(posted.every((r) => r.headers.authorization === "Bearer xyz")).toBe(true);
      expect(posted[3]!.params).toMatchObject({ name: "echo", arguments: { text: "hi" } });
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("custom tools replace the defaults", async () => {
    const server = await startMcpHttpServer({
      tools: [
        {
          name: "ping",
          inputSchema: { type: "object" },
          handler: () => ({ content: [{ type: "text", text: "pong" }] }),
        },
      ],
    });
    const client = new Client({ name: "t", version: "0" });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["ping"]);
      expect(await client.callTool({ name: "ping", arguments: {} })).toMatchObject({
        content: [{ text: "pong" }],
      });
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("stdio entry (dist/mcp-stdio.js, built by tsc -b): node <path>; whoami reads MCP_SECRET", async () => {
    const client = new Client({ name: "t", version: "0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [mcpStdioServerPath],
        env: { MCP_SECRET: "s3cret" },
      }),
    );
    try {
      const got = await exercise(client);
      expect(got.names).toEqual(["add", "ask", "echo", "fail", "whoami"]);
      expect(got.add.content[0]!.text).toBe("5");
      expect(got.fail).toMatchObject({ isError: true });
      expect(got.whoami.content[0]!.text).toBe("s3cret");
    } finally {
      await client.close();
    }
  });
});

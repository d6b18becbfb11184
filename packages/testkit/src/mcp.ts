/**
 * A real MCP server for tests, built on the official `@modelcontextprotocol/sdk`: streamable HTTP on
 * 127.0.0.1 (`startMcpHttpServer`) or stdio (`dist/mcp-stdio.js`, see `mcpStdioServerPath`).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  type ElicitRequestFormParams,
  type ElicitResult,
  ElicitResultSchema,
  isInitializeRequest,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

/** What a tool handler knows about the call besides its arguments. */
export interface McpToolContext {
  transport: "http" | "stdio";
  /** Headers of the HTTP request that carried the call (lower-cased names); `{}` over stdio. */
  headers: Record<string, string>;
  /** Asks the client (an MCP elicitation, form mode) and resolves with its answer. */
  elicit(message: string, requestedSchema: ElicitRequestFormParams["requestedSchema"]): Promise<ElicitResult>;
}

export interface McpTool {
  name: string;
  description?: string;
  /** A JSON Schema object (`{type:"object", properties, required}`). */
  inputSchema: { type: "object"; properties?: Record<string, unknown>; required?: string[] };
  handler(args: Record<string, unknown>, ctx: McpToolContext): CallToolResult | Promise<CallToolResult>;
}

const text = (value: string, isError = false): CallToolResult =>
  isError
    ? { content: [{ type: "text", text: value }], isError: true }
    : { content: [{ type: "text", text: value }] };

/**
 * `echo {text}` → the text; `add {a, b}` → the sum as text; `fail {}` → an `isError` result; `ask {question}` →
 * asks the client (an elicitation with one string field, `answer`) and returns `answer: <it>`;
 * `whoami {}` → the `Authorization` header of the call (HTTP) or `$MCP_SECRET` (stdio), `(none)` if unset.
 */
export function defaultMcpTools(): McpTool[] {
  return [
    {
      name: "echo",
      description: "Returns the given text unchanged.",
      inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      handler: (args) => text(String(args.text ?? "")),
    },
    {
      name: "add",
      description: "Adds two numbers and returns the sum as text.",
      inputSchema: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
      },
      handler: (args) => text(String(Number(args.a) + Number(args.b))),
    },
    {
      name: "fail",
      description: "Always fails (an isError result).",
      inputSchema: { type: "object", properties: {} },
      handler: () => text("this tool always fails", true),
    },
    {
      name: "ask",
      description: "Asks the user a question (an MCP elicitation) and returns the answer.",
      inputSchema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
      handler: async (args, ctx) => {
        const r = await ctx.elicit(String(args.question ?? "?"), {
          type: "object",
          properties: { answer: { type: "string" } },
          required: ["answer"],
        });
        return text(
          r.action === "accept" ? `answer: ${String(r.content?.answer ?? "")}` : `no answer (${r.action})`,
        );
      },
    },
    {
      name: "whoami",
      description:
        "Returns the caller's credentials: the Authorization header (HTTP) or $MCP_SECRET (stdio).",
      inputSchema: { type: "object", properties: {} },
      handler: (_args, ctx) =>
        text((ctx.transport === "http" ? ctx.headers.authorization : process.env.MCP_SECRET) ?? "(none)"),
    },
  ];
}

function headerRecord(headers: IncomingMessage["headers"] | Record<string, unknown> | undefined) {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : String(v);
  }
  return out;
}

/** An MCP `Server` (low-level API: tools take plain JSON Schemas) serving `tools`. */
export function createMcpServer(tools: McpTool[], transport: "http" | "stdio"): Server {
  const server = new Server({ name: "testkit-mcp", version: "0.1.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map((t) => ({
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      inputSchema: t.inputSchema,
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const tool = tools.find((t) => t.name === req.params.name);
    if (!tool) return text(`unknown tool: ${req.params.name}`, true);
    const headers = headerRecord(extra.requestInfo?.headers as Record<string, unknown> | undefined);
    const elicit = (message: string, requestedSchema: ElicitRequestFormParams["requestedSchema"]) =>
      extra.sendRequest(
        { method: "elicitation/create", params: { mode: "form", message, requestedSchema } },
        ElicitResultSchema,
      );
    return tool.handler(req.params.arguments ?? {}, { transport, headers, elicit });
  });
  return server;
}

/** One JSON-RPC message (or a bare GET/DELETE) that reached the HTTP server. */
export interface McpRecordedRequest {
  httpMethod: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The JSON-RPC method (`initialize`, `tools/list`, `tools/call`, `notifications/…`); absent for GET/DELETE and replies. */
  method?: string;
  params?: unknown;
}

export interface McpHttpServer {
  /** The streamable-HTTP endpoint, `http://127.0.0.1:PORT/mcp`. */
  url: string;
  /** Every request seen, in arrival order (one entry per JSON-RPC message of a POST). */
  requests: McpRecordedRequest[];
  close(): Promise<void>;
}

export interface McpHttpServerOptions {
  /** Default {@link defaultMcpTools}. */
  tools?: McpTool[];
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function sendJsonRpcError(res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** Serves MCP over streamable HTTP (stateful sessions) on `127.0.0.1:<random>/mcp`, recording every request. */
export async function startMcpHttpServer(opts: McpHttpServerOptions = {}): Promise<McpHttpServer> {
  const tools = opts.tools ?? defaultMcpTools();
  const requests: McpRecordedRequest[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/mcp") return sendJsonRpcError(res, 404, `not found: ${req.url}`);
    const headers = headerRecord(req.headers);
    const httpMethod = req.method ?? "GET";
    let parsed: unknown;
    if (httpMethod === "POST") {
      const raw = await readBody(req);
      try {
        parsed = JSON.parse(raw);
      } catch {
        return sendJsonRpcError(res, 400, "parse error");
      }
      for (const msg of Array.isArray(parsed) ? parsed : [parsed]) {
        const m = (msg ?? {}) as { method?: unknown; params?: unknown };
        const entry: McpRecordedRequest = { httpMethod, headers };
        if (typeof m.method === "string") entry.method = m.method;
        if (m.params !== undefined) entry.params = m.params;
        requests.push(entry);
      }
    } else {
      requests.push({ httpMethod, headers });
    }

    const sessionId = headers["mcp-session-id"];
    let transport = sessionId === undefined ? undefined : sessions.get(sessionId);
    if (!transport) {
      if (sessionId !== undefined) return sendJsonRpcError(res, 404, "unknown session");
      if (httpMethod !== "POST" || !isInitializeRequest(parsed)) {
        return sendJsonRpcError(res, 400, "no session: initialize first");
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, created);
        },
      });
      created.onclose = () => {
        if (created.sessionId !== undefined) sessions.delete(created.sessionId);
      };
      await createMcpServer(tools, "http").connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, parsed);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJsonRpcError(res, 500, err instanceof Error ? err.message : String(err));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closed = false;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => {})));
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await done;
    },
  };
}

/** Serves `tools` (default {@link defaultMcpTools}) over stdin/stdout until stdin closes. */
export async function runMcpStdioServer(tools: McpTool[] = defaultMcpTools()): Promise<void> {
  await createMcpServer(tools, "stdio").connect(new StdioServerTransport());
}

/**
 * The stdio MCP server entry (`packages/testkit/dist/mcp-stdio.js`), runnable as `node <path>`; it serves
 * {@link defaultMcpTools}. Resolved against `dist/` so it also works when testkit is loaded from `src/`
 * (the package must have been built).
 */
export const mcpStdioServerPath: string = fileURLToPath(new URL("../dist/mcp-stdio.js", import.meta.url));

/**
 * Tools as stored on an agent or session (domain/tools.ts parses what clients send into these): client-executed
 * function tools, MCP servers, web search and the agent's own automations; what reads them (which ones this server
 * runs, of which kind) and how they are shown (never an MCP server's authorization, header or environment values).
 */
import { isRecord } from "../kernel/is-record.js";

export interface FunctionTool {
  type: "function";
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface McpHttpTransport {
  type: "http";
  server_url: string;
  headers: Record<string, string>;
  /** Sent as `Authorization` (a bare token becomes `Bearer <token>`). Never shown. */
  authorization: string | null;
}

export interface McpStdioTransport {
  type: "stdio";
  command: string;
  args: string[];
  cwd: string | null;
  env: Record<string, string>;
}

export interface McpTool {
  type: "mcp";
  server_label: string;
  transport: McpHttpTransport | McpStdioTransport;
  allowed_tools: string[] | null;
  required: boolean;
}

export interface WebSearchTool {
  type: "web_search";
  mode: "disabled" | "cached" | "live";
}

/** The agent may schedule its own wake-ups (automations targeting its session): a tool this server answers. */
export interface AutomationsTool {
  type: "automations";
}

export type Tool = FunctionTool | McpTool | WebSearchTool | AutomationsTool;

/** The name the model calls the `automations` tool by (a function tool may not take it). */
export const AUTOMATIONS_TOOL_NAME = "automations";

/** The tools this server runs, out of a stored list. */
export function toolsOf(stored: unknown[]): Tool[] {
  // An MCP tool without a transport is a hosted connector the template kept as given (and never ran).
  return stored.filter(
    (t): t is Tool =>
      isRecord(t) &&
      (t.type === "function" ||
        t.type === "web_search" ||
        t.type === "automations" ||
        (t.type === "mcp" && isRecord(t.transport))),
  );
}

export const functionTools = (stored: unknown[]) =>
  toolsOf(stored).filter((t): t is FunctionTool => t.type === "function");
export const mcpTools = (stored: unknown[]) => toolsOf(stored).filter((t): t is McpTool => t.type === "mcp");

/** Tools as they are shown: never an MCP server's authorization, header values or environment values. */
export function publicTools(stored: unknown[]): unknown[] {
  return stored.map((t) => {
    if (!isRecord(t) || t.type !== "mcp" || !isRecord(t.transport)) return t;
    const transport = t.transport as unknown as McpHttpTransport | McpStdioTransport;
    if (transport.type === "http") {
      const { authorization: _secret, ...rest } = transport;
      return { ...t, transport: { ...rest, headers: redacted(transport.headers) } };
    }
    return { ...t, transport: { ...transport, env: redacted(transport.env) } };
  });
}

export const redacted = (m: Record<string, string>) =>
  Object.fromEntries(Object.keys(m).map((k) => [k, "[redacted]"]));

export const hasAutomationsTool = (stored: unknown[]) =>
  toolsOf(stored).some((t) => t.type === "automations");

/**
 * Whether two tool lists declare the same function tools, and the automations tool alike (the engine fixes the
 * tools it calls back for when a thread starts).
 */
export function sameFunctionTools(a: unknown[], b: unknown[]): boolean {
  return (
    JSON.stringify(functionTools(a)) === JSON.stringify(functionTools(b)) &&
    hasAutomationsTool(a) === hasAutomationsTool(b)
  );
}

/**
 * The tools an agent or session declares, in both dialects: client-executed function tools, MCP servers, web
 * search and the agent's own automations. Parsed once, strictly (a tool the engine would shadow, reject or could not honour is a 400 naming it),
 * stored normalised, and never shown with their secrets (MCP authorization, header and env values). An HTTP MCP
 * server's URL must be one the outbound guard allows (platform/net/outbound-guard.ts: as written and resolved now; the
 * engine connects to it, so a session's MCP servers are checked again when each turn starts). `ToolPolicy` is that, configured
 * once for the service and applied wherever tools come in.
 */

import { badRequest } from "../kernel/errors.js";
import { isRecord } from "../kernel/is-record.js";
import {
  AUTOMATIONS_TOOL_NAME,
  type AutomationsTool,
  type FunctionTool,
  type McpHttpTransport,
  type McpStdioTransport,
  type McpTool,
  type WebSearchTool,
} from "../model/tools.js";
import { type OutboundGuard, TargetRefused } from "../platform/net/outbound-guard.js";

/** Names of the engine's own tools (a function tool of the same name would be silently shadowed). */
export const RESERVED_TOOL_NAMES: ReadonlySet<string> = new Set([
  "exec_command",
  "write_stdin",
  "shell",
  "local_shell",
  "apply_patch",
  "update_plan",
  "view_image",
  "web_search",
  "request_user_input",
  "list_mcp_resources",
  "list_mcp_resource_templates",
  "read_mcp_resource",
  "get_goal",
  "create_goal",
  "update_goal",
  "spawn_agent",
  "send_input",
  "resume_agent",
  "wait_agent",
  "close_agent",
  "functions",
  "multi_agent_v1",
]);

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

function stringMap(v: unknown, where: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isRecord(v) || Object.values(v).some((x) => typeof x !== "string")) {
    throw badRequest(`'${where}' must be an object of strings`, where);
  }
  return v as Record<string, string>;
}

function optionalString(v: unknown, where: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw badRequest(`'${where}' must be a string`, where);
  return v;
}

/** A label the engine accepts as an MCP server name: [A-Za-z0-9_-], unique (later duplicates get _2, _3, …). */
function sanitiseLabel(raw: string, taken: Set<string>, index: number): string {
  const base =
    raw
      .replace(/[^A-Za-z0-9_-]/g, "_")
      .replace(/^_+|_+$/g, "")
      .slice(0, 64) || `mcp_${index}`;
  let label = base;
  for (let n = 2; taken.has(label); n++) label = `${base}_${n}`;
  taken.add(label);
  return label;
}

function functionTool(t: Record<string, unknown>, where: string, names: Set<string>): FunctionTool {
  const name = t.name;
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw badRequest(
      `'${where}.name' must be 1-128 characters: letters, digits, '_' or '-'`,
      `${where}.name`,
    );
  }
  if (RESERVED_TOOL_NAMES.has(name) || name.startsWith("mcp__")) {
    throw badRequest(
      `Function tool "${name}" has the name of one of the agent's built-in tools: rename it`,
      `${where}.name`,
    );
  }
  if (names.has(name)) throw badRequest(`Function tool "${name}" is declared twice`, `${where}.name`);
  names.add(name);
  if (t.async === true) {
    throw badRequest(
      `Function tool "${name}": async tools are not supported by this server (a tool result must answer the call during its turn)`,
      `${where}.async`,
    );
  }
  if (t.parameters !== undefined && t.parameters !== null && !isRecord(t.parameters)) {
    throw badRequest(`'${where}.parameters' must be a JSON Schema object`, `${where}.parameters`);
  }
  return {
    type: "function",
    name,
    description: optionalString(t.description, `${where}.description`) ?? "",
    parameters: isRecord(t.parameters) ? t.parameters : { type: "object", properties: {} },
  };
}

interface ToolOptions {
  /** The official dialect: every tool must be one this server runs. */
  strict: boolean;
  /** `--allow-mcp-stdio`. */
  allowStdio: boolean;
  /** Where HTTP MCP servers may be. */
  targets: OutboundGuard;
  /** The field the tools are in (default `tools`). */
  where?: string;
}

/** An HTTP MCP server's URL, to be resolved and checked once the list is parsed. */
interface McpTarget {
  url: URL;
  where: string;
}

const refusedTarget = (err: unknown, where: string) =>
  err instanceof TargetRefused ? badRequest(`'${where}': ${err.message}`, where) : err;

/** An MCP server in the official form (`transport`) or the original template's (URL and label at the top). */
function mcpTool(
  t: Record<string, unknown>,
  where: string,
  labels: Set<string>,
  opts: ToolOptions,
  index: number,
  targets: McpTarget[],
): McpTool {
  const given = t.server_label ?? t.name;
  const rawLabel = typeof given === "string" ? given : "";
  if (opts.strict && rawLabel === "") {
    throw badRequest(`'${where}.server_label' is required for an MCP server`, `${where}.server_label`);
  }
  const allowStdio = opts.allowStdio;
  const transport = isRecord(t.transport) ? t.transport : t;
  const w = isRecord(t.transport) ? `${where}.transport` : where;
  let parsed: McpHttpTransport | McpStdioTransport;
  const url = transport.server_url ?? transport.url;
  if (transport.type === "stdio" || (typeof transport.command === "string" && url === undefined)) {
    if (!allowStdio) {
      throw badRequest(
        `'${w}': stdio MCP servers are disabled on this server (their commands would run outside the agent's ` +
          "sandbox); use an http MCP server, or ask the operator to start the server with --allow-mcp-stdio",
        `${w}.type`,
      );
    }
    if (typeof transport.command !== "string" || transport.command === "") {
      throw badRequest(`'${w}.command' is required for a stdio MCP server`, `${w}.command`);
    }
    const args = transport.args ?? [];
    if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
      throw badRequest(`'${w}.args' must be an array of strings`, `${w}.args`);
    }
    parsed = {
      type: "stdio",
      command: transport.command,
      args: args as string[],
      cwd: optionalString(transport.cwd, `${w}.cwd`),
      env: stringMap(transport.env, `${w}.env`),
    };
  } else {
    if (typeof url !== "string")
      throw badRequest(`'${w}.server_url' is required for an MCP server`, `${w}.server_url`);
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw badRequest(`'${w}.server_url' is not a URL: ${url}`, `${w}.server_url`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw badRequest(`'${w}.server_url' must be an http(s) URL`, `${w}.server_url`);
    }
    try {
      opts.targets.checkHost(u);
    } catch (err) {
      throw refusedTarget(err, `${w}.server_url`);
    }
    targets.push({ url: u, where: `${w}.server_url` });
    parsed = {
      type: "http",
      server_url: url,
      headers: stringMap(transport.headers ?? t.headers, `${w}.headers`),
      authorization: optionalString(transport.authorization ?? t.authorization, `${w}.authorization`),
    };
  }
  const allowed = t.allowed_tools;
  if (
    allowed !== undefined &&
    allowed !== null &&
    (!Array.isArray(allowed) || allowed.some((a) => typeof a !== "string"))
  ) {
    throw badRequest(`'${where}.allowed_tools' must be an array of tool names`, `${where}.allowed_tools`);
  }
  return {
    type: "mcp",
    server_label: sanitiseLabel(rawLabel, labels, index),
    transport: parsed,
    allowed_tools: Array.isArray(allowed) ? (allowed as string[]) : null,
    required: t.required === true,
  };
}

/**
 * Parses a tools list. `strict` (the official dialect): every tool must be one this server runs; otherwise (the
 * template) tools it does not know are kept as given and left out (the original service skipped them too). The
 * names of HTTP MCP servers are resolved (every address checked) before the list is accepted.
 */
async function parseTools(raw: unknown[], opts: ToolOptions): Promise<unknown[]> {
  const targets: McpTarget[] = [];
  const parsed = parseToolList(raw, opts, targets);
  const checked = await Promise.allSettled(targets.map(({ url }) => opts.targets.checkResolved(url)));
  // (The first refused one in the list is named, whichever resolved first.)
  checked.forEach((c, i) => {
    if (c.status === "rejected") throw refusedTarget(c.reason, targets[i]!.where);
  });
  return parsed;
}

function parseToolList(raw: unknown[], opts: ToolOptions, targets: McpTarget[]): unknown[] {
  const names = new Set<string>();
  const labels = new Set<string>();
  const where = opts.where ?? "tools";
  let automations = false;
  const parsed = raw.map((t, i): unknown => {
    const w = `${where}[${i}]`;
    if (!isRecord(t)) {
      if (opts.strict) throw badRequest(`'${w}' must be a tool object`, w);
      return t;
    }
    switch (t.type) {
      case "function":
        return functionTool(t, w, names);
      case "mcp": {
        // The template kept (and skipped) hosted connectors: MCP tools with neither a URL nor a command.
        const transport = isRecord(t.transport) ? t.transport : t;
        const runnable = ["server_url", "url", "command"].some((k) => transport[k] !== undefined);
        if (!opts.strict && !runnable && transport.type !== "stdio") return t;
        return mcpTool(t, w, labels, opts, i, targets);
      }
      case "web_search": {
        const mode = t.mode ?? "live";
        if (mode !== "disabled" && mode !== "cached" && mode !== "live") {
          throw badRequest(`'${w}.mode' must be disabled, cached or live`, `${w}.mode`);
        }
        return { type: "web_search", mode } satisfies WebSearchTool;
      }
      case "automations":
        if (automations) throw badRequest(`'${w}': the automations tool is given twice`, `${w}.type`);
        automations = true;
        return { type: "automations" } satisfies AutomationsTool;
      default:
        if (opts.strict) {
          throw badRequest(
            `'${w}': tools of type ${JSON.stringify(t.type)} are not supported by this server (function, mcp, web_search, automations)`,
            `${w}.type`,
          );
        }
        return t;
    }
  });
  if (automations && names.has(AUTOMATIONS_TOOL_NAME)) {
    throw badRequest(
      `'${where}': a function tool named ${AUTOMATIONS_TOOL_NAME} would shadow the automations tool`,
      where,
    );
  }
  return parsed;
}

/** Tools as a client sent them, and how strictly its dialect reads them. */
export interface ClientTools {
  raw: unknown[];
  /** The official dialect: every tool must be one this server runs (the template's skips what it does not know). */
  strict: boolean;
  /** The request field they came in (default `tools`). */
  where?: string;
}

/**
 * The tool policy, configured once for the service and applied wherever tools come in (agents, sessions, in both
 * dialects; automations' inline agents): a stdio MCP server is refused unless the operator allowed them
 * (`--allow-mcp-stdio`), an HTTP MCP server must be where the service may connect.
 */
export class ToolPolicy {
  constructor(private readonly deps: { allowStdio: boolean; targets: OutboundGuard }) {}

  /** The tools to store, or a 400 naming the first one refused. */
  admit(tools: ClientTools): Promise<unknown[]> {
    return parseTools(tools.raw, {
      strict: tools.strict,
      allowStdio: this.deps.allowStdio,
      targets: this.deps.targets,
      ...(tools.where ? { where: tools.where } : {}),
    });
  }
}

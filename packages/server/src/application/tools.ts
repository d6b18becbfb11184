/**
 * The tool policy, decided here once for every route that takes tools (agents, sessions, in both dialects): the
 * tools a client sent are parsed, a stdio MCP server is refused unless the operator allowed them (`--allow-mcp-stdio`),
 * an HTTP MCP server must be where the service may connect (platform/net/outbound-guard.ts). Nothing a client sent
 * is stored before it passed.
 */
import { parseTools } from "../domain/tools.js";
import type { OutboundGuard } from "../platform/net/outbound-guard.js";

/** Tools as a client sent them, and how strictly its dialect reads them. */
export interface ClientTools {
  raw: unknown[];
  /** The official dialect: every tool must be one this server runs (the template's skips what it does not know). */
  strict: boolean;
  /** The request field they came in (default `tools`). */
  where?: string;
}

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

import type { ServerRequestHandler, ThreadOptions } from "@codex-agent-api/codex";
import type { Config } from "../config.js";
import { settingsOf } from "../domain/settings.js";
import { functionTools, type McpTool, mcpTools, toolsOf } from "../domain/tools.js";
import type { SessionRecord } from "../store/types.js";
import { isolated, PERMISSION_PROFILE } from "./codex-home.js";

/**
 * How a session's engine thread is started or resumed: its cwd (the only place its commands may read and write,
 * under the engine's permission profile from config.toml — a `sandbox` here would replace that profile), model,
 * instructions, the commands' HOME (the workspace, so tools that write to ~ work inside the sandbox), and the tool
 * set its configuration says: the client's function tools (fixed when the thread starts), its MCP servers (sent
 * again on every resume: the engine does not keep them), web search only with a `web_search` tool, subagents only
 * when `multi_agent.enabled`. `onServerRequest` answers the engine's requests of this thread (function calls,
 * approvals).
 */
export function threadOptionsFor(
  session: SessionRecord,
  config: Config,
  onServerRequest?: ServerRequestHandler,
): ThreadOptions {
  const settings = settingsOf(session.extra);
  const webSearch = toolsOf(session.tools).find((t) => t.type === "web_search");
  const asks = settings.approval_policy !== "never";
  const mcp = Object.fromEntries(
    mcpTools(session.tools).map((t) => [t.server_label, mcpServerConfig(t, asks)]),
  );
  return {
    cwd: session.workspace,
    model: session.model,
    ...(isolated(config) ? {} : { sandbox: config.sandbox }),
    approvalPolicy: settings.approval_policy,
    config: {
      shell_environment_policy: { set: { HOME: session.workspace } },
      // Also per thread (sent again on every resume): a thread first started elsewhere, or under an older
      // configuration, runs under the profile from now on.
      ...(isolated(config) ? { default_permissions: PERMISSION_PROFILE } : {}),
      web_search: webSearch?.type === "web_search" ? webSearch.mode : "disabled",
      features: { multi_agent: settings.multi_agent.enabled },
      ...(settings.multi_agent.enabled && settings.multi_agent.max_concurrent_subagents !== null
        ? { agents: { max_threads: settings.multi_agent.max_concurrent_subagents } }
        : {}),
      ...(Object.keys(mcp).length > 0 ? { mcp_servers: mcp } : {}),
    },
    dynamicTools: functionTools(session.tools).map((t) => ({
      type: "function",
      name: t.name,
      description: t.description,
      inputSchema: t.parameters,
    })),
    ...(session.instructions ? { developerInstructions: session.instructions } : {}),
    ...(onServerRequest ? { onServerRequest } : {}),
  };
}

/**
 * One MCP server in the engine's config. Authorization goes into the request headers (the engine refuses a
 * `bearer_token` and would otherwise need it in its config files). Tool calls run without asking unless the
 * approval policy asks, in which case each call is an approval request.
 */
function mcpServerConfig(t: McpTool, asks: boolean): Record<string, unknown> {
  const transport = t.transport;
  const common = {
    ...(t.allowed_tools ? { enabled_tools: t.allowed_tools } : {}),
    required: t.required,
    default_tools_approval_mode: asks ? "prompt" : "approve",
  };
  if (transport.type === "stdio") {
    return {
      command: transport.command,
      args: transport.args,
      env: transport.env,
      ...(transport.cwd ? { cwd: transport.cwd } : {}),
      ...common,
    };
  }
  const headers = { ...transport.headers };
  if (transport.authorization) {
    headers.Authorization = /\s/.test(transport.authorization.trim())
      ? transport.authorization
      : `Bearer ${transport.authorization}`;
  }
  return { url: transport.server_url, http_headers: headers, ...common };
}

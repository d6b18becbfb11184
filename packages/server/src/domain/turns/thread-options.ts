import type { ServerRequestHandler, ThreadEnvironmentParams, ThreadOptions } from "@codex-agent-api/codex";
import type { Config } from "../../config/load.js";
import { isRecord } from "../../kernel/is-record.js";
import { settingsOf } from "../../model/settings.js";
import { functionTools, hasAutomationsTool, type McpTool, mcpTools, toolsOf } from "../../model/tools.js";
import { engineSearchPath, isolated, PERMISSION_PROFILE } from "../../platform/engine/codex-home.js";
import type { SessionRecord } from "../../store/types.js";
import { AUTOMATIONS_TOOL_SPEC } from "../automations/tool-spec.js";
import { CONTAINER_PATH, SANDBOX_CWD } from "../sandboxes/paths.js";
import { sandboxIdOf } from "../sessions/workspace.js";

/** The session each thread options object was built for (read by engine decorators: environments, vaults). */
const built = new WeakMap<ThreadOptions, SessionRecord>();
export const sessionOfThreadOptions = (options: ThreadOptions): SessionRecord | undefined =>
  built.get(options);

/**
 * The options with variables added to what the thread's commands get (`shell_environment_policy.set`, a copy still
 * known as the session's): `under` yields to a variable set already, `over` replaces it.
 */
export function withCommandVariables(
  options: ThreadOptions,
  vars: { under?: Record<string, string>; over?: Record<string, string> },
): ThreadOptions {
  const config: Record<string, unknown> = { ...options.config };
  const policy = isRecord(config.shell_environment_policy) ? config.shell_environment_policy : {};
  const set = isRecord(policy.set) ? policy.set : {};
  config.shell_environment_policy = { ...policy, set: { ...vars.under, ...set, ...vars.over } };
  return derivedThreadOptions(options, { ...options, config });
}

/** Options derived from a session's (a decorator's additions): still known as that session's. */
export function derivedThreadOptions(from: ThreadOptions, to: ThreadOptions): ThreadOptions {
  const session = built.get(from);
  if (session) built.set(to, session);
  return to;
}

/**
 * What a session's environment adds to its thread (set when the environment is made: domain/environments): the
 * network for its commands (the permission profile's, per thread), variables (never secret ones: those are added
 * when the thread is leased) and directories put first on PATH (its installed packages).
 */
export interface EnvironmentThread {
  network: boolean;
  env: Record<string, string>;
  path: string[];
}

/**
 * The execution environment of a sandboxed session's thread (its sandbox's executor, added to the engine as
 * `environment/add` under the sandbox's id), for every thread start and every turn: the engine does not take a
 * resumed thread's environments from its rollout.
 */
export function executionEnvironmentsOf(session: SessionRecord): ThreadEnvironmentParams[] | undefined {
  const id = sandboxIdOf(session);
  return id ? [{ environmentId: id, cwd: SANDBOX_CWD }] : undefined;
}

export function environmentThreadOf(session: SessionRecord): EnvironmentThread | null {
  const t = session.extra.environment_thread as Partial<EnvironmentThread> | undefined;
  if (!t || typeof t !== "object") return null;
  return { network: t.network === true, env: { ...t.env }, path: [...(t.path ?? [])] };
}

/**
 * How a session's engine thread is started or resumed: its cwd (the only place its commands may read and write,
 * under the engine's permission profile from config.toml — a `sandbox` here would replace that profile), model,
 * instructions, the commands' HOME (the workspace, so tools that write to ~ work inside the sandbox), and the tool
 * set its configuration says: the client's function tools and the agent's automations tool (fixed when the thread
 * starts), its MCP servers (sent
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
  const sandbox = sandboxIdOf(session);
  const mcp = Object.fromEntries(
    mcpTools(session.tools).map((t) => [t.server_label, mcpServerConfig(t, asks, sandbox)]),
  );
  const environment = environmentThreadOf(session);
  const environments = executionEnvironmentsOf(session);
  // A sandboxed session's commands run in its container (the container is their sandbox: its own file system,
  // network and limits); otherwise under the engine's permission profile on this host.
  const profile = isolated(config) && !environments;
  const options: ThreadOptions = {
    cwd: environments ? SANDBOX_CWD : session.workspace,
    model: session.model,
    ...(environments ? { sandbox: "danger-full-access", environments } : {}),
    ...(!environments && !isolated(config) ? { sandbox: config.sandbox } : {}),
    approvalPolicy: settings.approval_policy,
    config: {
      shell_environment_policy: {
        set: {
          // (The engine sends its own variables with each command: in a container, its paths.)
          ...(environments ? { HOME: SANDBOX_CWD, PATH: CONTAINER_PATH } : { HOME: session.workspace }),
          ...environmentVariables(
            environment,
            environments ? CONTAINER_PATH : engineSearchPath(config.dataDir),
          ),
        },
      },
      // An environment with the network: the profile's network, for this thread only (same profile otherwise).
      ...(environment?.network && profile
        ? { permissions: { [PERMISSION_PROFILE]: { network: { enabled: true } } } }
        : {}),
      // Also per thread (sent again on every resume): a thread first started elsewhere, or under an older
      // configuration, runs under the profile from now on.
      ...(profile ? { default_permissions: PERMISSION_PROFILE } : {}),
      web_search: webSearch?.type === "web_search" ? webSearch.mode : "disabled",
      features: { multi_agent: settings.multi_agent.enabled },
      ...(settings.multi_agent.enabled && settings.multi_agent.max_concurrent_subagents !== null
        ? { agents: { max_threads: settings.multi_agent.max_concurrent_subagents } }
        : {}),
      ...(Object.keys(mcp).length > 0 ? { mcp_servers: mcp } : {}),
    },
    dynamicTools: [
      ...functionTools(session.tools).map((t) => ({
        type: "function" as const,
        name: t.name,
        description: t.description,
        inputSchema: t.parameters,
      })),
      // The agent's automations: called like a function tool, answered by this server (domain/automations).
      ...(hasAutomationsTool(session.tools) ? [{ type: "function" as const, ...AUTOMATIONS_TOOL_SPEC }] : []),
    ],
    ...(session.instructions ? { developerInstructions: session.instructions } : {}),
    ...(onServerRequest ? { onServerRequest } : {}),
  };
  built.set(options, session);
  return options;
}

/** The environment's variables, with its directories first on the engine's PATH. */
function environmentVariables(
  environment: EnvironmentThread | null,
  searchPath: string,
): Record<string, string> {
  if (!environment) return {};
  const path = [...environment.path, searchPath].join(":");
  return { ...environment.env, ...(environment.path.length > 0 ? { PATH: path } : {}) };
}

/**
 * One MCP server in the engine's config. Authorization goes into the request headers (the engine refuses a
 * `bearer_token` and would otherwise need it in its config files). Tool calls run without asking unless the
 * approval policy asks, in which case each call is an approval request.
 */
function mcpServerConfig(t: McpTool, asks: boolean, sandbox: string | null): Record<string, unknown> {
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
      // In a sandboxed session the server runs in its container, like the agent's commands (the engine needs a
      // cwd there).
      ...(sandbox ? { environment_id: sandbox, cwd: transport.cwd ?? SANDBOX_CWD } : {}),
      ...(!sandbox && transport.cwd ? { cwd: transport.cwd } : {}),
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

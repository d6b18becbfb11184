/** The engine processes (`codex app-server`) and what they may do. */
import type { SandboxMode } from "@codex-agent-api/codex";
import { table, toggle, value } from "../option.js";
import { int, oneOf, text } from "../schemas.js";

const SANDBOX_MODES = [
  "read-only",
  "workspace-write",
  "danger-full-access",
] as const satisfies readonly SandboxMode[];

export const engine = table(null, {
  enginePoolSize: value({
    flag: "engines",
    arg: "<n>",
    env: "AGENT_ENGINE_POOL_SIZE",
    label: "AGENT_ENGINE_POOL_SIZE", // its variable in errors, not its flag (as it always did)
    schema: int({ min: 1 }),
    default: 1,
    help: "app-server processes (AGENT_ENGINE_POOL_SIZE, default 1)",
  }),
  /** An engine process with more loaded threads than this is recycled when idle. */
  maxThreadsPerEngine: value({ env: "AGENT_MAX_THREADS_PER_ENGINE", schema: int({ min: 1 }), default: 100 }),
  sandbox: value({
    flag: "sandbox",
    arg: "<mode>",
    env: "AGENT_SANDBOX",
    schema: oneOf(SANDBOX_MODES, "read-only, workspace-write or danger-full-access"),
    default: "workspace-write",
    blank: "value",
    help: "read-only | workspace-write | danger-full-access (AGENT_SANDBOX, default workspace-write)",
  }),
  /**
   * Whether clients may declare stdio MCP servers: on the local backend, commands the engine starts outside the
   * agent's sandbox with the engine's rights (off unless the operator trusts every client with the machine); on the
   * container backend they run in the session's container.
   */
  allowMcpStdio: toggle({
    flag: "allow-mcp-stdio",
    env: "AGENT_ALLOW_MCP_STDIO",
    help: [
      "let clients declare stdio MCP servers: on the local backend, commands run outside",
      "the sandbox with the server's rights (AGENT_ALLOW_MCP_STDIO=1; default off)",
    ],
  }),
  codexPath: value({
    flag: "codex-path",
    env: "CODEX_PATH",
    schema: text,
    default: undefined,
    blank: "value",
  }),
});

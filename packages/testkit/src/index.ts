// The mock Responses API lives in @codex-agent-api/mock-model; re-exported so existing imports keep working.
export * from "@codex-agent-api/mock-model";
export {
  type GitHttpRequest,
  type GitHttpServer,
  type GitHttpServerOptions,
  startGitHttpServer,
} from "./git-http-server.js";
export {
  commitFiles,
  type GitDaemon,
  type GitOutOptions,
  gitOut,
  makeBareFrom,
  makeRepo,
  startGitDaemon,
} from "./git-servers.js";
export {
  type ApprovalPolicy,
  type CodexConfigTomlOptions,
  type CodexHome,
  type CodexHomeOptions,
  codexConfigToml,
  createCodexHome,
  type MockEnvironment,
  type SandboxMode,
  startMockEnvironment,
} from "./harness.js";
export {
  createMcpServer,
  defaultMcpTools,
  type McpHttpServer,
  type McpHttpServerOptions,
  type McpRecordedRequest,
  type McpTool,
  type McpToolContext,
  mcpStdioServerPath,
  runMcpStdioServer,
  startMcpHttpServer,
} from "./mcp.js";
export {
  childPids,
  cmdline,
  cpuMs,
  descendantPids,
  isAlive,
  pidsRunning,
  processesUsing,
  rssMiB,
} from "./processes.js";

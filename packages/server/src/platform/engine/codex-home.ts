import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import {
  BWRAP_HELPER_DIR,
  bwrapHelperDir,
  findSystemBwrap,
  resolveCodexBinary,
  type SystemBwrap,
} from "@codex-agent-api/codex";
import type { Config } from "../../config/load.js";

/** The env var the engine reads the model key from (never written to disk). */
export const MODEL_KEY_ENV = "OPENAI_API_KEY";

const str = (value: string): string => JSON.stringify(value);

/** The engine's permission profile for agent commands (unless the operator chose danger-full-access). */
export const PERMISSION_PROFILE = "agent";

/**
 * The profile an environment's setup commands and package installs run under (engine `command/exec`): the agent's
 * files (the system directories, its own workspace writable, nothing else), plus the network unless the operator
 * turned it off for setup.
 */
export const SETUP_PERMISSION_PROFILE = "agent_setup";

/** Whether agent commands run under this server's permission profile (the isolation the API promises). */
export const isolated = (config: Config) => config.sandbox !== "danger-full-access";

/**
 * The engine's config.toml: one model provider (the in-process mock, OpenAI, or any Responses-compatible base
 * URL), no plugin sync, no update check, no shell snapshot, no analytics; goals on. Agent commands get:
 * - a minimal environment: the engine's core variables (HOME, PATH, SHELL, USER, TMPDIR, …), never the model key,
 *   the service token or anything else of the server's (`inherit = "core"`, the engine's secret filter on);
 * - a permission profile: read access to the system directories (`:minimal`) and the engine binary, read and write
 *   access to the thread's own cwd (its session's workspace), nothing else — not the data directory, not the
 *   engine's state, not another session's workspace; no network.
 * With `--sandbox danger-full-access` the operator turns all of that off (documented in SECURITY.md).
 */
export function engineConfigToml(
  config: Config,
  providerUrl: string,
  opts: { readable?: readonly string[] } = {},
): string {
  const lines = [
    `model = ${str(config.model)}`,
    `model_provider = "agents_api"`,
    `approval_policy = "never"`,
    ...(isolated(config)
      ? [`default_permissions = ${str(PERMISSION_PROFILE)}`]
      : [`sandbox_mode = "danger-full-access"`]),
    "check_for_update_on_startup = false",
    // The workspace is the agent's whole project. Without this, every turn looks for skills and AGENTS.md in each
    // directory from the cwd up to a project root, and under the permission profile each lookup is a sandboxed
    // helper process (tens of ms per turn).
    "project_root_markers = []",
    "",
    "[features]",
    "goals = true",
    "plugins = false",
    "shell_snapshot = false",
    "instant_interrupt = false",
    "",
    "[analytics]",
    "enabled = false",
    "",
    "[shell_environment_policy]",
    `inherit = "core"`,
    "ignore_default_excludes = false",
    // Without SHLVL, bash treats the command's stdin as a network connection and sources ~/.bashrc.
    `set = { SHLVL = "1" }`,
    "",
    "[model_providers.agents_api]",
    `name = "Agents API model provider"`,
    `base_url = ${str(providerUrl)}`,
    `wire_api = "responses"`,
    "request_max_retries = 0",
    "stream_max_retries = 0",
  ];
  if (config.provider.kind !== "mock") lines.push(`env_key = ${str(MODEL_KEY_ENV)}`);
  if (isolated(config)) {
    const readable = (opts.readable ?? []).map((p) => `${str(p)} = "read"`);
    const workspace = config.sandbox === "read-only" ? "read" : "write";
    lines.push(
      "",
      `[permissions.${PERMISSION_PROFILE}.filesystem]`,
      `":minimal" = "read"`,
      // The sandbox runs the engine binary itself to help with file operations.
      `${str(resolveCodexBinary())} = "read"`,
      ...readable,
      "",
      `[permissions.${PERMISSION_PROFILE}.filesystem.":workspace_roots"]`,
      `"." = ${str(workspace)}`,
      `".git" = ${str(workspace)}`,
      "",
      `[permissions.${SETUP_PERMISSION_PROFILE}.filesystem]`,
      `":minimal" = "read"`,
      `${str(resolveCodexBinary())} = "read"`,
      ...readable,
      "",
      `[permissions.${SETUP_PERMISSION_PROFILE}.filesystem.":workspace_roots"]`,
      `"." = "write"`,
      `".git" = "write"`,
      "",
      `[permissions.${SETUP_PERMISSION_PROFILE}.network]`,
      `enabled = ${config.environments.setupNetwork}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** Variables of the server's own environment the engine process may see (never tokens, keys or URLs). */
const ENGINE_ENV = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM"];

/** Writes the engine's isolated CODEX_HOME and returns it with the environment the engine needs. */
export function prepareCodexHome(
  config: Config,
  mockUrl: string | null,
): {
  codexHome: string;
  env: Record<string, string>;
  modelUrl: string;
  /** The system bubblewrap the engine's sandbox helper will find, and whether it needed the helper directory. */
  bwrap: (SystemBwrap & { helperDir: string | null }) | null;
} {
  const codexHome = join(config.dataDir, "codex-home");
  mkdirSync(codexHome, { recursive: true });
  const providerUrl = config.provider.kind === "mock" ? mockUrl! : config.provider.baseUrl;
  // The engine starts with a clean environment: the allowed variables, its home, and the model key it needs.
  const env: Record<string, string> = { CODEX_HOME: codexHome, RUST_LOG: "warn" };
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && (ENGINE_ENV.includes(k) || k.startsWith("LC_"))) env[k] = v;
  }
  // A system bubblewrap without --argv0 would fail every sandboxed command (bwrap.ts): the helper directory goes
  // first on the engine's PATH, readable in the sandbox.
  const system = isolated(config) ? findSystemBwrap(env.PATH) : null;
  const helperDir = bwrapHelperDir(config.dataDir, resolveCodexBinary(), system);
  if (helperDir) env.PATH = [helperDir, env.PATH].filter(Boolean).join(delimiter);
  writeFileSync(
    join(codexHome, "config.toml"),
    engineConfigToml(config, providerUrl, { readable: helperDir ? [helperDir] : [] }),
  );
  writeEnvironments(codexHome, config.sandboxes.backend === "container");
  if (config.provider.kind !== "mock" && config.provider.apiKey) env[MODEL_KEY_ENV] = config.provider.apiKey;
  return { codexHome, env, modelUrl: providerUrl, bwrap: system && { ...system, helperDir } };
}

/**
 * The engine's execution environments (`environments.toml`). On the container backend the engine has no local
 * one: a thread whose container's executor was not added (a resumed thread the engine took from its rollout, an
 * executor gone) fails its commands instead of running them on this host. On the local backend, no file: the
 * engine's default (local execution).
 */
function writeEnvironments(codexHome: string, containers: boolean): void {
  const path = join(codexHome, "environments.toml");
  if (!containers) {
    rmSync(path, { force: true });
    return;
  }
  writeFileSync(
    path,
    [
      "# Written by codex-agent-api: no command runs on this host.",
      'default = "none"',
      "include_local = false",
      "",
    ].join("\n"),
  );
}

/**
 * The PATH the engine's commands start from when the service sets one (an environment's package directories go
 * first): the service's own, after the bubblewrap helper directory when prepareCodexHome made one.
 */
export function engineSearchPath(dataDir: string): string {
  const base = process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";
  const helper = join(dataDir, BWRAP_HELPER_DIR);
  return existsSync(join(helper, "codex-linux-sandbox")) ? [helper, base].join(delimiter) : base;
}

/** Why a turn cannot reach a model, or null when it can. */
export function missingModelReason(config: Config): string | null {
  if (config.provider.kind === "mock" || config.provider.apiKey) return null;
  return (
    "No model is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a Responses-compatible gateway), " +
    "or start the server with --mock-model to use the built-in scripted model."
  );
}

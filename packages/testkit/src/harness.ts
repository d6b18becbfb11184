/** An isolated CODEX_HOME whose config points the engine at a {@link MockResponsesServer}. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { bwrapHelperDir, findSystemBwrap, resolveCodexBinary } from "@codex-agent-api/codex";
import { MockResponsesServer, type MockResponsesServerOptions } from "@codex-agent-api/mock-model";

export type ApprovalPolicy = "never" | "on-request" | "untrusted";
export type SandboxMode = "read-only" | "workspace-write" | "danger-full-access";

export interface CodexConfigTomlOptions {
  /** The provider `base_url`, e.g. `MockResponsesServer.url`. */
  providerUrl: string;
  /** Default `"mock-model"`. */
  model?: string;
  /** Default `"never"`. */
  approvalPolicy?: string;
  /** Default `"read-only"`. */
  sandboxMode?: string;
  /** `[features] instant_interrupt`; default false. */
  instantInterrupt?: boolean;
  /** Provider `env_key`: the engine then sends `Authorization: Bearer $<envKey>` (and fails if unset). */
  envKey?: string;
  /** Appended verbatim at the end of the file. */
  extraToml?: string;
}

const str = (value: string): string => JSON.stringify(value);

/** The `config.toml` text for an offline engine talking to the mock provider `mock`. */
export function codexConfigToml(opts: CodexConfigTomlOptions): string {
  const lines = [
    `model = ${str(opts.model ?? "mock-model")}`,
    `model_provider = "mock"`,
    `approval_policy = ${str(opts.approvalPolicy ?? "never")}`,
    `sandbox_mode = ${str(opts.sandboxMode ?? "read-only")}`,
    "check_for_update_on_startup = false",
    "",
    "[features]",
    "goals = true",
    "plugins = false",
    "shell_snapshot = false",
    `instant_interrupt = ${opts.instantInterrupt === true}`,
    "",
    "[analytics]",
    "enabled = false",
    "",
    "[model_providers.mock]",
    `name = "Mock Responses API"`,
    `base_url = ${str(opts.providerUrl)}`,
    `wire_api = "responses"`,
    "request_max_retries = 0",
    "stream_max_retries = 0",
  ];
  if (opts.envKey !== undefined) lines.push(`env_key = ${str(opts.envKey)}`);
  let text = `${lines.join("\n")}\n`;
  if (opts.extraToml) text += `\n${opts.extraToml.trimEnd()}\n`;
  return text;
}

export interface CodexHomeOptions {
  /** Base URL of the mock (`MockResponsesServer.url`). */
  mockUrl: string;
  /** Parent directory for `codex-home/` and `workspace/`; default: a new `mkdtemp` directory. */
  dir?: string;
  /** Default `"mock-model"`. */
  model?: string;
  approvalPolicy?: ApprovalPolicy;
  sandboxMode?: SandboxMode;
  /** Default false. */
  instantInterrupt?: boolean;
  envKey?: string;
  /** If set together with `envKey`, `env[envKey]` is set to this value. */
  envKeyValue?: string;
  extraToml?: string;
}

export interface CodexHome {
  codexHome: string;
  /** A directory created beside `codexHome`, to use as the thread cwd. */
  workspace: string;
  /**
   * `CODEX_HOME`, `HOME` (an empty directory beside it: the shells the agent runs never read this machine's user
   * dotfiles), `CODEX_APP_SERVER_DISABLE_MANAGED_CONFIG=1`, `RUST_LOG=warn` (+ `envKey` if given a value).
   */
  env: Record<string, string>;
  /** Removes what was created (the whole temp dir, or just the three subdirectories of a given `dir`). */
  dispose(): Promise<void>;
}

/** Creates `<dir>/codex-home/config.toml`, `<dir>/workspace` and `<dir>/home`. */
export async function createCodexHome(opts: CodexHomeOptions): Promise<CodexHome> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), "codex-testkit-")));
  const codexHome = join(dir, "codex-home");
  const workspace = join(dir, "workspace");
  const home = join(dir, "home");
  await mkdir(codexHome, { recursive: true });
  await mkdir(workspace, { recursive: true });
  await mkdir(home, { recursive: true });
  const tomlOpts: CodexConfigTomlOptions = { providerUrl: opts.mockUrl };
  if (opts.model !== undefined) tomlOpts.model = opts.model;
  if (opts.approvalPolicy !== undefined) tomlOpts.approvalPolicy = opts.approvalPolicy;
  if (opts.sandboxMode !== undefined) tomlOpts.sandboxMode = opts.sandboxMode;
  if (opts.instantInterrupt !== undefined) tomlOpts.instantInterrupt = opts.instantInterrupt;
  if (opts.envKey !== undefined) tomlOpts.envKey = opts.envKey;
  if (opts.extraToml !== undefined) tomlOpts.extraToml = opts.extraToml;
  await writeFile(join(codexHome, "config.toml"), codexConfigToml(tomlOpts));
  const env: Record<string, string> = {
    CODEX_HOME: codexHome,
    HOME: home,
    CODEX_APP_SERVER_DISABLE_MANAGED_CONFIG: "1",
    RUST_LOG: "warn",
  };
  if (opts.envKey !== undefined && opts.envKeyValue !== undefined) env[opts.envKey] = opts.envKeyValue;
  // A system bubblewrap the engine cannot use as it is (Debian 12's 0.8.0): its helper directory first on PATH.
  const helper = bwrapHelperDir(dir, resolveCodexBinary(), findSystemBwrap());
  if (helper) env.PATH = [helper, process.env.PATH].filter(Boolean).join(delimiter);
  let disposed = false;
  return {
    codexHome,
    workspace,
    env,
    async dispose() {
      if (disposed) return;
      disposed = true;
      const rmOpts = { recursive: true, force: true, maxRetries: 3 } as const;
      if (ownDir) await rm(dir, rmOpts);
      else await Promise.all([rm(codexHome, rmOpts), rm(workspace, rmOpts), rm(home, rmOpts)]);
    },
  };
}

export interface MockEnvironment {
  mock: MockResponsesServer;
  home: CodexHome;
  /** Closes the mock and disposes the home. */
  close(): Promise<void>;
}

/** Starts a mock and creates a CODEX_HOME pointing at it. */
export async function startMockEnvironment(
  opts: Partial<CodexHomeOptions> & MockResponsesServerOptions = {},
): Promise<MockEnvironment> {
  const { fallback, capture, ...homeOpts } = opts;
  const mockOpts: MockResponsesServerOptions = { fallback: fallback ?? null };
  if (capture !== undefined) mockOpts.capture = capture;
  const mock = await MockResponsesServer.start(mockOpts);
  try {
    const home = await createCodexHome({ ...homeOpts, mockUrl: homeOpts.mockUrl ?? mock.url });
    return {
      mock,
      home,
      async close() {
        await mock.close();
        await home.dispose();
      },
    };
  } catch (err) {
    await mock.close();
    throw err;
  }
}

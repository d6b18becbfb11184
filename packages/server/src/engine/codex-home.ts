import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config.js";

/** The env var the engine reads the model key from (never written to disk). */
export const MODEL_KEY_ENV = "OPENAI_API_KEY";

const str = (value: string): string => JSON.stringify(value);

/**
 * The engine's config.toml: one model provider (the in-process mock, OpenAI, or any Responses-compatible base
 * URL), no plugin sync, no update check, no shell snapshot, no analytics; goals on.
 */
export function engineConfigToml(config: Config, providerUrl: string): string {
  const lines = [
    `model = ${str(config.model)}`,
    `model_provider = "agents_api"`,
    `approval_policy = "never"`,
    `sandbox_mode = ${str(config.sandbox)}`,
    "check_for_update_on_startup = false",
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
    "[model_providers.agents_api]",
    `name = "Agents API model provider"`,
    `base_url = ${str(providerUrl)}`,
    `wire_api = "responses"`,
    "request_max_retries = 0",
    "stream_max_retries = 0",
  ];
  if (config.provider.kind !== "mock") lines.push(`env_key = ${str(MODEL_KEY_ENV)}`);
  return `${lines.join("\n")}\n`;
}

/** Writes the engine's isolated CODEX_HOME and returns it with the environment the engine needs. */
export function prepareCodexHome(
  config: Config,
  mockUrl: string | null,
): { codexHome: string; env: Record<string, string> } {
  const codexHome = join(config.dataDir, "codex-home");
  mkdirSync(codexHome, { recursive: true });
  const providerUrl = config.provider.kind === "mock" ? mockUrl! : config.provider.baseUrl;
  writeFileSync(join(codexHome, "config.toml"), engineConfigToml(config, providerUrl));
  const env: Record<string, string> = { CODEX_HOME: codexHome };
  if (config.provider.kind !== "mock" && config.provider.apiKey) env[MODEL_KEY_ENV] = config.provider.apiKey;
  return { codexHome, env };
}

/** Why a turn cannot reach a model, or null when it can. */
export function missingModelReason(config: Config): string | null {
  if (config.provider.kind === "mock" || config.provider.apiKey) return null;
  return (
    "No model is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a Responses-compatible gateway), " +
    "or start the server with --mock-model to use the built-in scripted model."
  );
}

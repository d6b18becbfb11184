import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { codexConfigToml } from "@codex-agent-api/testkit";
import type { Config } from "../config.js";

/** The env var the engine reads the model key from (never written to disk). */
export const MODEL_KEY_ENV = "OPENAI_API_KEY";

/**
 * Writes the engine's isolated CODEX_HOME (offline-safe config: no plugin sync, no update check, no shell
 * snapshot) with one model provider: the in-process mock, OpenAI, or any Responses-compatible base URL.
 */
export function prepareCodexHome(
  config: Config,
  mockUrl: string | null,
): { codexHome: string; env: Record<string, string> } {
  const codexHome = join(config.dataDir, "codex-home");
  mkdirSync(codexHome, { recursive: true });
  const providerUrl = config.provider.kind === "mock" ? mockUrl! : config.provider.baseUrl;
  const toml = codexConfigToml({
    providerUrl,
    model: config.model,
    approvalPolicy: "never",
    sandboxMode: config.sandbox,
    instantInterrupt: false,
    ...(config.provider.kind === "mock" ? {} : { envKey: MODEL_KEY_ENV }),
  });
  writeFileSync(join(codexHome, "config.toml"), toml);
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

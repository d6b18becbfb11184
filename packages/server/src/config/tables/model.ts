/** The model: which one by default, and who serves it (OpenAI, another Responses API, the in-process mock). */
import { computed, table, toggle, value } from "../option.js";
import { text } from "../schemas.js";

const mockModel = toggle({
  flag: "mock-model",
  env: "AGENT_MOCK_MODEL",
  input: true,
  help: "start the scripted mock model in-process (offline demo, no key needed)",
});
const baseUrl = value({
  flag: "model-base-url",
  arg: "<url>",
  env: "OPENAI_BASE_URL",
  schema: text,
  default: null,
  input: true,
  help: "any Responses-compatible API (OPENAI_BASE_URL); key from OPENAI_API_KEY",
});
const apiKey = value({ env: "OPENAI_API_KEY", schema: text, default: null, blank: "unset", input: true });

export type Provider =
  | { kind: "openai"; apiKey: string | null; baseUrl: string }
  | { kind: "custom"; apiKey: string | null; baseUrl: string }
  | { kind: "mock" };

export const model = table(null, {
  /** Default model for agents and sessions that do not name one. */
  model: value({
    flag: "model",
    arg: "<name>",
    env: "CODEX_MODEL",
    schema: text,
    default: (get) => (get(mockModel) ? "mock-model" : "gpt-5-codex"),
    blank: "value",
    help: "default model (CODEX_MODEL, default gpt-5-codex; mock-model with --mock-model)",
  }),
  baseUrl,
  mockModel,
  apiKey,
  provider: computed((get): Provider => {
    if (get(mockModel)) return { kind: "mock" };
    const url = get(baseUrl);
    return url
      ? { kind: "custom", apiKey: get(apiKey), baseUrl: url }
      : { kind: "openai", apiKey: get(apiKey), baseUrl: "https://api.openai.com/v1" };
  }),
});

/**
 * An agent's model settings (the official API's `reasoning`, `text`, `service_tier`, `multi_agent`, …): always
 * complete — a partial value given by a client is merged over the documented defaults — and applied to the turns
 * the engine runs (reasoning effort and summary, a JSON-schema output format).
 */
export type ReasoningEffort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";
export type ServiceTier = "auto" | "default" | "flex" | "priority" | "fast" | "ultrafast";
/**
 * This server's extension: when the agent asks before it acts. `never` (the default): it never asks; `on-request`:
 * the model decides when to ask (e.g. to run outside the sandbox); `untrusted`: every command that is not known to
 * be read-only, every file change and every MCP tool call is a required action the client approves or denies.
 */
export type ApprovalPolicy = "never" | "on-request" | "untrusted";
export const APPROVAL_POLICIES: readonly ApprovalPolicy[] = ["never", "on-request", "untrusted"];

export interface AgentSettings {
  reasoning: { effort: ReasoningEffort | null; summary: "concise" | "detailed" | "auto" | null };
  text: {
    format: { type: "text" } | { type: "json_schema"; schema: Record<string, unknown> };
    verbosity: "low" | "medium" | "high";
  };
  service_tier: ServiceTier;
  multi_agent: { enabled: boolean; max_concurrent_subagents: number | null };
  approval_policy: ApprovalPolicy;
  compaction?: { async: boolean };
  experimental?: { time_awareness: boolean };
}

/** What a client may send: every part optional (null = back to the default). */
export interface SettingsPatch {
  reasoning?: Partial<AgentSettings["reasoning"]> | null;
  text?: Partial<AgentSettings["text"]> | null;
  service_tier?: ServiceTier | null;
  multi_agent?: Partial<AgentSettings["multi_agent"]> | null;
  approval_policy?: ApprovalPolicy | null;
  compaction?: AgentSettings["compaction"] | null;
  experimental?: AgentSettings["experimental"] | null;
}

export const DEFAULT_SETTINGS: AgentSettings = {
  reasoning: { effort: null, summary: null },
  text: { format: { type: "text" }, verbosity: "medium" },
  service_tier: "auto",
  multi_agent: { enabled: false, max_concurrent_subagents: null },
  approval_policy: "never",
};

/**
 * Applies a patch: each field given replaces the current one, merged over its documented default (so
 * `text: {verbosity: "low"}` keeps `format: {type: "text"}`); fields not given stay as they are.
 */
export function mergeSettings(current: AgentSettings, patch: SettingsPatch): AgentSettings {
  const next: AgentSettings = { ...current };
  if (patch.reasoning !== undefined) next.reasoning = { ...DEFAULT_SETTINGS.reasoning, ...patch.reasoning };
  if (patch.text !== undefined) next.text = { ...DEFAULT_SETTINGS.text, ...patch.text };
  if (patch.service_tier !== undefined)
    next.service_tier = patch.service_tier ?? DEFAULT_SETTINGS.service_tier;
  if (patch.multi_agent !== undefined)
    next.multi_agent = { ...DEFAULT_SETTINGS.multi_agent, ...patch.multi_agent };
  if (patch.approval_policy !== undefined)
    next.approval_policy = patch.approval_policy ?? DEFAULT_SETTINGS.approval_policy;
  if (patch.compaction !== undefined) {
    if (patch.compaction === null) delete next.compaction;
    else next.compaction = patch.compaction;
  }
  if (patch.experimental !== undefined) {
    if (patch.experimental === null) delete next.experimental;
    else next.experimental = patch.experimental;
  }
  return next;
}

/** The settings kept in a record's `extra` (records written before settings existed get the defaults). */
export function settingsOf(extra: Record<string, unknown>): AgentSettings {
  const stored = extra.settings as AgentSettings | undefined;
  return stored ? { ...DEFAULT_SETTINGS, ...stored } : DEFAULT_SETTINGS;
}

/** The engine's reasoning effort for a setting (the engine has no "max"). */
export function engineEffort(effort: ReasoningEffort | null): Exclude<ReasoningEffort, "max"> | undefined {
  if (effort === null) return undefined;
  return effort === "max" ? "xhigh" : effort;
}

/** The setting fields an inline agent (an automation's target) may carry. */
const SETTING_KEYS = [
  "reasoning",
  "text",
  "service_tier",
  "multi_agent",
  "approval_policy",
  "compaction",
  "experimental",
] as const;

/** The settings part of an inline agent (absent fields are left out). */
export function inlineAgentSettings(agent: Record<string, unknown>): SettingsPatch {
  const patch: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) if (agent[key] !== undefined) patch[key] = agent[key];
  return patch as SettingsPatch;
}

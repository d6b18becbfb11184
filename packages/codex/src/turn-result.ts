/** What a finished turn reports: its final response, and its token usage (the thread's total less the baseline). */
import type { ThreadTokenUsage } from "./generated/v2/ThreadTokenUsage.js";
import type { ThreadItem, TokenUsageBreakdown, TurnUsage } from "./types.js";

function subtract(a: TokenUsageBreakdown, b: TokenUsageBreakdown | null): TokenUsageBreakdown {
  if (!b) return { ...a };
  return {
    totalTokens: a.totalTokens - b.totalTokens,
    inputTokens: a.inputTokens - b.inputTokens,
    cachedInputTokens: a.cachedInputTokens - b.cachedInputTokens,
    cacheWriteInputTokens: (a.cacheWriteInputTokens ?? 0) - (b.cacheWriteInputTokens ?? 0),
    outputTokens: a.outputTokens - b.outputTokens,
    reasoningOutputTokens: a.reasoningOutputTokens - b.reasoningOutputTokens,
  };
}

export function toTurnUsage(u: ThreadTokenUsage, baseline: TokenUsageBreakdown | null): TurnUsage {
  return {
    last: u.last,
    total: u.total,
    modelContextWindow: u.modelContextWindow,
    turn: subtract(u.total, baseline),
  };
}

export function finalResponse(items: ThreadItem[]): string | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!;
    if (item.type === "agentMessage" && item.phase !== "commentary") return item.text;
  }
  return null;
}

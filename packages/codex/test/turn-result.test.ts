// What a finished turn reports, computed without an engine: the final response and the turn's share of the
// thread's token usage.
import { describe, expect, test } from "vitest";
import type { ThreadTokenUsage } from "../src/generated/v2/ThreadTokenUsage.js";
import { finalResponse, toTurnUsage } from "../src/turn-result.js";
import type { ThreadItem, TokenUsageBreakdown } from "../src/types.js";

const message = (text: string, phase: "commentary" | "final_answer" | null) =>
  ({ type: "agentMessage", id: text, text, phase }) as ThreadItem;

describe("finalResponse", () => {
  test("the last agent message that is not commentary", () => {
    const items = [message("a", null), message("b", "final_answer"), message("c", "commentary")];
    expect(finalResponse(items)).toBe("b");
    expect(finalResponse([message("only", "commentary")])).toBeNull();
    expect(finalResponse([])).toBeNull();
  });
});

describe("toTurnUsage", () => {
  // Without `cacheWrite`, the field is missing (as from an engine that does not report it): taken as 0.
  const usage = (n: number, cacheWrite?: number) =>
    ({
      totalTokens: 10 * n,
      inputTokens: 6 * n,
      cachedInputTokens: 2 * n,
      ...(cacheWrite === undefined ? {} : { cacheWriteInputTokens: cacheWrite }),
      outputTokens: 4 * n,
      reasoningOutputTokens: n,
    }) as TokenUsageBreakdown;
  const thread = (total: TokenUsageBreakdown): ThreadTokenUsage =>
    ({ last: usage(1), total, modelContextWindow: 1000 }) as ThreadTokenUsage;

  test("the turn's share is the thread's total less the total when it started", () => {
    expect(toTurnUsage(thread(usage(5, 3)), usage(2)).turn).toEqual({
      totalTokens: 30,
      inputTokens: 18,
      cachedInputTokens: 6,
      cacheWriteInputTokens: 3,
      outputTokens: 12,
      reasoningOutputTokens: 3,
    });
  });

  test("without a baseline (the thread's first turn) it is the whole total, copied", () => {
    const total = usage(5);
    const u = toTurnUsage(thread(total), null);
    expect(u).toEqual({ last: usage(1), total, modelContextWindow: 1000, turn: total });
    expect(u.turn).not.toBe(total);
  });
});

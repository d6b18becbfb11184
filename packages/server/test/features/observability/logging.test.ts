import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, logFormat } from "../../../src/features/observability/logging.js";

describe("log format", () => {
  it("pretty on a terminal, JSON otherwise; LOG_FORMAT forces either", () => {
    expect(logFormat({ isTTY: true }, {})).toBe("pretty");
    expect(logFormat({ isTTY: false }, {})).toBe("json");
    expect(logFormat({}, {})).toBe("json");
    expect(logFormat({ isTTY: true }, { LOG_FORMAT: "json" })).toBe("json");
    expect(logFormat({ isTTY: false }, { LOG_FORMAT: " Pretty " })).toBe("pretty");
    expect(() => logFormat({ isTTY: true }, { LOG_FORMAT: "xml" })).toThrow(
      /LOG_FORMAT must be json or pretty/,
    );
  });

  it("writes one JSON object per line, or readable lines", () => {
    const capture = () => {
      const stream = new PassThrough();
      const chunks: string[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c.toString("utf8")));
      return { stream, text: () => chunks.join("") };
    };
    const json = capture();
    createLogger("info", { format: "json", destination: json.stream }).info({ turns: 3 }, "hello json");
    const line = JSON.parse(json.text().trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 30, msg: "hello json", turns: 3, service: "codex-agent-api" });

    const pretty = capture();
    createLogger("info", { format: "pretty", destination: pretty.stream }).warn({ turns: 4 }, "hello people");
    const text = pretty.text();
    expect(text).toMatch(/WARN.*hello people/);
    expect(text).toContain('"turns":4');
    expect(() => JSON.parse(text)).toThrow();
    // Not a terminal: no colour codes.
    expect(text).not.toContain("\u001b[");
  });
});

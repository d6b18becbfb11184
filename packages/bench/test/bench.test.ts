// The bench's pure helpers: statistics, ratios, table and target formatting, SSE parsing. No timing assertions.
import { describe, expect, it } from "vitest";
import { SseLineScanner, SseParser, seqOf } from "../src/http.js";
import {
  checkTarget,
  formatNumber,
  formatRatio,
  formatTable,
  formatTargets,
  maxOf,
  median,
  minOf,
  p95,
  p99,
  percentile,
  ratio,
  summarize,
} from "../src/stats.js";

describe("statistics", () => {
  it("median of odd and even counts, unsorted input left untouched", () => {
    const xs = [5, 1, 3];
    expect(median(xs)).toBe(3);
    expect(xs).toEqual([5, 1, 3]);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
    expect(median([])).toBeNaN();
  });

  it("percentiles interpolate between closest ranks", () => {
    const xs = Array.from({ length: 101 }, (_, i) => i); // 0..100
    expect(p95(xs)).toBe(95);
    expect(p99(xs)).toBe(99);
    expect(percentile(xs, 0)).toBe(0);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([10, 20], 95)).toBeCloseTo(19.5);
    expect(percentile([1, 2, 3], 150)).toBe(3);
  });

  it("min/max loop over large arrays (no argument spreading)", () => {
    const big = Float64Array.from({ length: 300_000 }, (_, i) => i % 1000);
    expect(minOf(big)).toBe(0);
    expect(maxOf(big)).toBe(999);
    expect(minOf([])).toBeNaN();
  });

  it("summarize", () => {
    const s = summarize([1, 2, 3, 4]);
    expect(s).toMatchObject({ n: 4, median: 2.5, min: 1, max: 4, mean: 2.5 });
    expect(s.p95).toBeCloseTo(3.85);
  });

  it("ratio is null when it cannot be computed", () => {
    expect(ratio(110, 100)).toBeCloseTo(1.1);
    expect(ratio(1, 0)).toBeNull();
    expect(ratio(null, 2)).toBeNull();
    expect(ratio(1, Number.NaN)).toBeNull();
  });
});

describe("formatting", () => {
  it("numbers keep 3–4 significant digits", () => {
    expect(formatNumber(1234.56)).toBe("1235");
    expect(formatNumber(12.345)).toBe("12.3");
    expect(formatNumber(1.2345)).toBe("1.23");
    expect(formatNumber(0.12345)).toBe("0.123");
    expect(formatNumber(7)).toBe("7");
    expect(formatNumber(null)).toBe("—");
    expect(formatNumber(Number.NaN)).toBe("—");
    expect(formatRatio(1.0789)).toBe("1.08×");
    expect(formatRatio(12.34)).toBe("12.3×");
    expect(formatRatio(null)).toBe("—");
  });

  it("tables align columns and drop empty optional ones", () => {
    const text = formatTable("[1] Turn latency", [
      { metric: "SDK", unit: "ms", n: 15, median: 120.4, p95: 150 },
      { metric: "HTTP template", unit: "ms", n: 15, median: 128.9, p95: 160.2, ratio: 1.0706, vs: "SDK" },
    ]);
    const lines = text.trimEnd().split("\n");
    expect(lines[0]).toBe("[1] Turn latency");
    expect(lines[1]).toMatch(/^-+$/);
    expect(lines[2]).toMatch(/^metric\s+unit\s+n\s+median\s+p95\s+ratio\s+vs$/);
    expect(lines[3]).toMatch(/^SDK\s+ms\s+15\s+120\s+150\s+—$/);
    expect(lines[4]).toMatch(/^HTTP template\s+ms\s+15\s+129\s+160\s+1\.07×\s+SDK$/);
    // right-aligned numbers end in the same column
    expect(lines[3]!.indexOf("120") + 3).toBe(lines[4]!.indexOf("129") + 3);
    expect(text).not.toContain("p99");
    expect(text).not.toContain("note");
  });

  it("targets are checked and reported, never thrown", () => {
    const results = [
      checkTarget({ name: "HTTP/SDK", value: 1.2, op: "<=", threshold: 1.1, unit: "×" }),
      checkTarget({ name: "GET req/s", value: 6000, op: ">=", threshold: 5000, unit: "req/s" }),
      checkTarget({ name: "replay", value: null, op: "<=", threshold: 1000, unit: "ms" }),
      checkTarget({ name: "bounded", value: 1, op: ">=", threshold: 1, unit: "", display: "yes" }),
    ];
    expect(results.map((r) => r.met)).toEqual([false, true, null, true]);
    const text = formatTargets(results);
    expect(text).toMatch(/MISSED\s+HTTP\/SDK\s+1\.20 ×\s+<= 1\.10 ×/);
    expect(text).toMatch(/met\s+GET req\/s\s+6000 req\/s\s+>= 5000 req\/s/);
    expect(text).toMatch(/n\/a\s+replay\s+— ms/);
    expect(text).toMatch(/met\s+bounded\s+yes\s+yes/);
  });
});

describe("SSE parsing", () => {
  it("splits frames across chunks and skips comments", () => {
    const p = new SseParser();
    expect(p.push("id: 3\nevent: a\nda", 1, 1000)).toEqual([]);
    const frames = p.push('ta: {"x":1}\n\n: keepalive\n\nid: 4:1\ndata: [DONE]\n\n', 2, 2000);
    expect(frames).toEqual([
      { id: "3", event: "a", data: '{"x":1}', t: 2, epoch: 2000 },
      { id: "4:1", event: null, data: "[DONE]", t: 2, epoch: 2000 },
    ]);
    expect(seqOf("4:1")).toBe(4);
    expect(seqOf("17")).toBe(17);
    expect(seqOf(null)).toBeNaN();
  });

  it("the line scanner reports ids and event names in order, across chunks, skipping long data lines", () => {
    const seen: string[] = [];
    const scan = new SseLineScanner((kind, value) => seen.push(`${kind}=${value}`));
    const big = "x".repeat(5000);
    scan.push("retry: 3000\nid: 1\nevent: agent.session.idle\ndata: {}\n\nid");
    scan.push(": 2:0\nev");
    scan.push(`ent: a\ndata: "${big.slice(0, 2500)}`);
    scan.push(`${big.slice(2500)}"\n\n: keepalive\nid: 3\ndata: {"id: 9":1}\n\n`);
    scan.push("event: agent.session.turn.completed\nid: 4\n");
    expect(seen).toEqual([
      "id=1",
      "event=agent.session.idle",
      "id=2:0",
      "event=a",
      "id=3",
      "event=agent.session.turn.completed",
      "id=4",
    ]);
  });
});

/** Pure statistics and formatting helpers (no I/O, no clocks): unit-tested. */

/** The p-th percentile (0–100) with linear interpolation between closest ranks; NaN for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (Math.min(100, Math.max(0, p)) / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (rank - lo);
}

export const median = (samples: readonly number[]): number => percentile(samples, 50);
export const p95 = (samples: readonly number[]): number => percentile(samples, 95);
export const p99 = (samples: readonly number[]): number => percentile(samples, 99);

/** Smallest / largest value (loops: spreading 10⁵+ samples into Math.min would overflow the stack). */
export function minOf(samples: ArrayLike<number>): number {
  let m = Number.NaN;
  for (let i = 0; i < samples.length; i++) if (!(samples[i]! >= m)) m = samples[i]!;
  return m;
}

export function maxOf(samples: ArrayLike<number>): number {
  let m = Number.NaN;
  for (let i = 0; i < samples.length; i++) if (!(samples[i]! <= m)) m = samples[i]!;
  return m;
}

export function mean(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  let sum = 0;
  for (const s of samples) sum += s;
  return sum / samples.length;
}

/** a / b, or null when either is not a finite number or b is 0. */
export function ratio(a: number | null | undefined, b: number | null | undefined): number | null {
  if (a === null || a === undefined || b === null || b === undefined) return null;
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null;
  return a / b;
}

export interface Summary {
  n: number;
  median: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

export function summarize(samples: readonly number[]): Summary {
  return {
    n: samples.length,
    median: median(samples),
    p95: p95(samples),
    p99: p99(samples),
    min: minOf(samples),
    max: maxOf(samples),
    mean: mean(samples),
  };
}

/**
 * A row of samples: n, median, p95, p99, and (with `vs`) the ratio of its median to the reference samples' median.
 */
export function sampleRow(
  metric: string,
  unit: string,
  samples: readonly number[],
  vs?: { ref: readonly number[]; name: string },
): Row {
  const s = summarize(samples);
  return {
    metric,
    unit,
    n: s.n,
    median: s.median,
    p95: s.p95,
    p99: s.p99,
    ratio: vs ? ratio(s.median, median(vs.ref)) : null,
    vs: vs?.name ?? null,
  };
}

/** One line of a scenario table. `null` / undefined cells print as "—". */
export interface Row {
  metric: string;
  unit: string;
  n?: number | null;
  median: number | null;
  p95?: number | null;
  p99?: number | null;
  /** This row against its reference (`vs`), measured in the same run. */
  ratio?: number | null;
  /** The reference of `ratio`. */
  vs?: string | null;
  note?: string | null;
}

/** A number with 3–4 significant digits: 1234 → "1234", 12.34 → "12.3", 0.1234 → "0.123". */
export function formatNumber(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "-∞";
  const a = Math.abs(v);
  if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toFixed(3);
}

export function formatRatio(r: number | null | undefined): string {
  if (r === null || r === undefined || !Number.isFinite(r)) return "—";
  return `${r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`;
}

const HEADERS = ["metric", "unit", "n", "median", "p95", "p99", "ratio", "vs", "note"] as const;
/** Columns whose cells are right-aligned. */
const NUMERIC = new Set<string>(["n", "median", "p95", "p99", "ratio"]);

/** A plain-text table (fixed-width columns; empty `note`/`vs`/`p99` columns are left out). */
export function formatTable(title: string, rows: readonly Row[]): string {
  const cells = rows.map((r) => ({
    metric: r.metric,
    unit: r.unit,
    n: r.n === undefined || r.n === null ? "" : String(r.n),
    median: formatNumber(r.median),
    p95: formatNumber(r.p95),
    p99: formatNumber(r.p99),
    ratio: formatRatio(r.ratio),
    vs: r.vs ?? "",
    note: r.note ?? "",
  }));
  const used = HEADERS.filter((h) => {
    if (h === "note" || h === "vs" || h === "n") return cells.some((c) => c[h] !== "");
    if (h === "p99") return rows.some((r) => r.p99 !== undefined && r.p99 !== null);
    return true;
  });
  const width = (h: (typeof HEADERS)[number]) => Math.max(h.length, ...cells.map((c) => c[h].length));
  const widths = new Map(used.map((h) => [h, width(h)]));
  const line = (get: (h: (typeof HEADERS)[number]) => string) =>
    used
      .map((h, i) => {
        const text = get(h);
        const w = widths.get(h)!;
        if (i === used.length - 1 && !NUMERIC.has(h)) return text;
        return NUMERIC.has(h) ? text.padStart(w) : text.padEnd(w);
      })
      .join("  ")
      .trimEnd();
  const header = line((h) => h);
  const rule = "-".repeat(Math.max(title.length, header.length));
  return [title, rule, header, ...cells.map((c) => line((h) => c[h])), ""].join("\n");
}

export type Comparison = ">=" | "<=";

/** A target to steer by: reported, never asserted. */
export interface Target {
  name: string;
  /** The measured value (null when the scenario did not produce it). */
  value: number | null;
  op: Comparison;
  threshold: number;
  unit: string;
  /** Shown instead of the number (e.g. "yes"/"no" for a yes/no target). */
  display?: string;
  detail?: string;
}

export interface TargetResult extends Target {
  met: boolean | null;
}

export function checkTarget(t: Target): TargetResult {
  if (t.value === null || !Number.isFinite(t.value)) return { ...t, met: null };
  return { ...t, met: t.op === ">=" ? t.value >= t.threshold : t.value <= t.threshold };
}

export function formatTargets(results: readonly TargetResult[]): string {
  const rows = results.map((r) => ({
    status: r.met === null ? "n/a" : r.met ? "met" : "MISSED",
    name: r.name,
    value: r.display ?? `${formatNumber(r.value)}${r.unit ? ` ${r.unit}` : ""}`,
    target:
      r.display !== undefined ? "yes" : `${r.op} ${formatNumber(r.threshold)}${r.unit ? ` ${r.unit}` : ""}`,
    detail: r.detail ?? "",
  }));
  const w = (k: keyof (typeof rows)[number], title: string) =>
    Math.max(title.length, ...rows.map((r) => r[k].length));
  const ws = { status: w("status", "status"), name: w("name", "target"), value: w("value", "measured") };
  const wt = w("target", "goal");
  const out = [
    `${"status".padEnd(ws.status)}  ${"target".padEnd(ws.name)}  ${"measured".padStart(ws.value)}  ${"goal".padEnd(wt)}  detail`,
    ...rows.map((r) =>
      `${r.status.padEnd(ws.status)}  ${r.name.padEnd(ws.name)}  ${r.value.padStart(ws.value)}  ${r.target.padEnd(wt)}  ${r.detail}`.trimEnd(),
    ),
  ];
  return `${out.join("\n")}\n`;
}

import type { TokenUsage } from "./api/types";

export function formatTime(seconds: number | null | undefined): string {
  if (!seconds) return "—";
  return new Date(seconds * 1000).toLocaleString();
}

export function formatUsage(u: TokenUsage | null | undefined): string {
  if (!u) return "—";
  return `${u.total_tokens} tokens (in ${u.input_tokens}, out ${u.output_tokens})`;
}

/** "key=value, other=x" → {key: "value", other: "x"} (pairs without "=" are ignored). */
export function parseMetadata(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const k = part.slice(0, eq).trim();
    if (k) out[k] = part.slice(eq + 1).trim();
  }
  return out;
}

export function formatMetadata(m: Record<string, string>): string {
  return Object.entries(m)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

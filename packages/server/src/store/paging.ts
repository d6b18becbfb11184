/** Page sizes and page assembly, the same for every store implementation. */
import type { Page } from "./types.js";

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 1000;

export function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIMIT;
  return Math.min(MAX_LIMIT, Math.max(1, Math.trunc(limit)));
}

/** `rows` holds up to limit + 1 rows: the extra one only says there are more. */
export function toPage<T>(rows: T[], limit: number): Page<T> {
  const has_more = rows.length > limit;
  if (has_more) rows.length = limit;
  return { data: rows, has_more };
}

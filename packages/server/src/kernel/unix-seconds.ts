/**
 * Times clients give (a one-time automation's `run_at`) and the schedule times derived from them: whole Unix
 * seconds from the epoch to the end of year 9999 (the last instant ISO 8601 writes with four digits, and far inside
 * what a JavaScript Date and both stores hold exactly).
 */
export const MAX_UNIX_SECONDS = 253_402_300_799;

/** `9999-12-31T23:59:59Z`, for messages. */
export const MAX_UNIX_SECONDS_ISO = new Date(MAX_UNIX_SECONDS * 1000).toISOString().replace(".000Z", "Z");

/** Whether `v` is a whole number of seconds in [0, MAX_UNIX_SECONDS]. */
export function isUnixSeconds(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= MAX_UNIX_SECONDS;
}

/**
 * Refuses to store a schedule time that is not whole seconds in range (callers validate first: this is the last
 * line, so neither store ever holds a fraction, a huge value or NaN). Null and absent fields are left alone.
 */
export function assertUnixSeconds(what: string, times: Record<string, number | null | undefined>): void {
  for (const [field, v] of Object.entries(times)) {
    if (v === null || v === undefined || isUnixSeconds(v)) continue;
    throw new RangeError(
      `${what}.${field} must be whole Unix seconds between 0 and ${MAX_UNIX_SECONDS}, got ${String(v)}`,
    );
  }
}

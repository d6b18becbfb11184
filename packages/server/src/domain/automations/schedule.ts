/**
 * When a periodic automation fires: a standard five-field cron expression read in an IANA timezone (croner, with
 * Vixie day-of-month OR day-of-week matching). Across a DST change an occurrence in the skipped hour fires once at
 * the first valid instant after it, and one in the repeated hour fires once (croner's behaviour, tested).
 */
import { Cron } from "croner";
import { badRequest } from "../../kernel/errors.js";
import type { AutomationRecord } from "../../store/types.js";

/** Whether the runtime knows the IANA timezone. */
function knownTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function cron(expression: string, timezone: string): Cron {
  return new Cron(expression, { timezone, mode: "5-part" });
}

/** Checks an expression and timezone (400 naming the field); returns the next occurrence after `from`. */
export function checkSchedule(expression: string, timezone: string, from: number): number {
  if (!knownTimezone(timezone)) {
    throw badRequest(
      `'timezone' must be an IANA timezone like Europe/Paris or UTC, got "${timezone}"`,
      "timezone",
    );
  }
  if (expression.trim().split(/\s+/).length !== 5) {
    throw badRequest(
      "'expression' must be a standard five-field cron expression (minute hour day-of-month month day-of-week)",
      "expression",
    );
  }
  let next: number | null;
  try {
    next = nextOccurrence(expression, timezone, from);
  } catch (err) {
    throw badRequest(`Invalid 'expression': ${(err as Error).message}`, "expression");
  }
  if (next === null) throw badRequest("'expression' has no future occurrence", "expression");
  return next;
}

/** The first occurrence strictly after `after` (Unix seconds), or null when there is none. */
export function nextOccurrence(expression: string, timezone: string, after: number): number | null {
  const next = cron(expression, timezone).nextRun(new Date(Math.floor(after * 1000)));
  return next ? next.getTime() / 1000 : null;
}

/** The latest occurrence at or before `at` (Unix seconds), or null when there is none. */
export function latestOccurrence(expression: string, timezone: string, at: number): number | null {
  // previousRuns counts a run in the same second as the reference; the reference itself is excluded: look from
  // just after it.
  const [prev] = cron(expression, timezone).previousRuns(1, new Date(Math.floor(at * 1000) + 1));
  return prev && prev.getTime() / 1000 <= at ? prev.getTime() / 1000 : null;
}

/** The next occurrence of an automation after `after` (null: none, e.g. a one-time one). */
export function nextRunOf(
  a: Pick<AutomationRecord, "type" | "expression" | "timezone" | "run_at">,
  after: number,
) {
  if (a.type === "once") return a.run_at !== null && a.run_at > after ? a.run_at : null;
  return nextOccurrence(a.expression ?? "", a.timezone ?? "UTC", after);
}

/**
 * The agent's own `automations` tool (`{type: "automations"}` among its tools): the model schedules its own
 * wake-ups — automations whose target is its session, so that when one fires its instructions arrive as a message
 * to the session (an automation notification) — lists them, and cancels them. The engine calls it like a client's
 * function tool (a dynamic tool); this server answers the call itself, within the session's project, and records
 * `created_by: {type: "agent", session_id, tool_call_id}`. The automations are the API's own: a person sees,
 * pauses or deletes them with `client.beta.agents.automations`. What the model is shown: tool-spec.ts.
 */

import type { AutomationService } from "../../domain/automations/service.js";
import type { ServerToolAnswer } from "../../domain/feature.js";
import { ApiError } from "../../kernel/errors.js";
import { isRecord } from "../../kernel/is-record.js";
import type { Scope } from "../../model/scope.js";
import type { AutomationRecord } from "../../store/types.js";

/** One call of the tool by the engine, for a session. */
export interface AutomationsToolCall {
  sessionId: string;
  projectId: string;
  callId: string;
  arguments: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v.trim() : undefined);

/** A wake-up as the model sees it. */
function summary(a: AutomationRecord) {
  const iso = (secs: number | null) => (secs === null ? null : new Date(secs * 1000).toISOString());
  return {
    automation_id: a.id,
    name: a.name,
    status: a.status,
    ...(a.type === "once" ? { run_at: iso(a.run_at) } : { expression: a.expression, timezone: a.timezone }),
    next_run_at: iso(a.next_run_at),
    instructions: a.target.type === "existing_session" ? a.target.instructions : null,
  };
}

/**
 * `run_at` in seconds since the epoch (the service's unit): an ISO 8601 text (a fraction of a second is rounded up:
 * never earlier than asked), or already a number of seconds (the service checks it is whole and in range).
 */
function runAtOf(v: unknown): number | string {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  const text = str(v);
  const ms = text === undefined ? Number.NaN : Date.parse(text);
  return Number.isNaN(ms)
    ? "run_at must be an ISO 8601 date-time, e.g. 2026-12-02T09:00:00Z"
    : Math.ceil(ms / 1000);
}

/** Answers one call of the `automations` tool. Bad arguments are the model's to fix: a failure it can read. */
export async function runAutomationsTool(
  service: AutomationService,
  call: AutomationsToolCall,
): Promise<ServerToolAnswer> {
  const scope: Scope = { projectId: call.projectId, admin: false };
  const args = isRecord(call.arguments) ? call.arguments : {};
  const fail = (text: string): ServerToolAnswer => ({ success: false, text });
  const ok = (value: unknown): ServerToolAnswer => ({ success: true, text: JSON.stringify(value) });
  try {
    switch (args.action) {
      case "list": {
        const page = await service.list(scope, { limit: 100, order: "asc", session_id: call.sessionId });
        return ok({ automations: page.data.map(summary) });
      }
      case "delete": {
        const id = str(args.automation_id);
        if (!id) return fail("delete needs automation_id");
        const a = await service.get(scope, id);
        if (a.target.type !== "existing_session" || a.target.session_id !== call.sessionId) {
          return fail(`${id} is not one of this session's wake-ups`);
        }
        await service.delete(scope, id);
        return ok({ deleted: id });
      }
      case "create": {
        const instructions = str(args.instructions);
        if (!instructions) return fail("create needs instructions: the message you will get when it fires");
        const expression = str(args.expression);
        if ((args.run_at === undefined) === (expression === undefined)) {
          return fail("create needs exactly one of run_at (once) and expression (repeating)");
        }
        let schedule: Parameters<AutomationService["create"]>[1]["schedule"];
        if (expression !== undefined) {
          schedule = { type: "periodic", expression, timezone: str(args.timezone) ?? "UTC" };
        } else {
          const runAt = runAtOf(args.run_at);
          if (typeof runAt === "string") return fail(runAt);
          schedule = { type: "once", run_at: runAt };
        }
        const created = await service.create(
          scope,
          {
            name: str(args.name) ?? instructions.slice(0, 60),
            schedule,
            target: { type: "existing_session", session_id: call.sessionId, instructions },
          },
          { type: "agent", session_id: call.sessionId, tool_call_id: call.callId },
        );
        return ok(summary(created));
      }
      default:
        return fail("action must be create, list or delete");
    }
  } catch (err) {
    // The service's refusals (a bad cron expression, a time in the past, an unknown id) are the model's to fix.
    if (err instanceof ApiError) return fail(err.message);
    throw err;
  }
}

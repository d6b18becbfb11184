/**
 * The webhook outbox's vocabulary: which log events are webhook events, and their thin payloads (the official
 * `agent.session.*` webhook events: the session id and what kind of environment it runs in, or the kind of action
 * it waits for; `agent.environment.*`: the environment id). Both stores call {@link outboxEvents} inside their event append, so a webhook event exists exactly
 * when its log event does (same transaction): one delivery row per subscribed endpoint of the session's project.
 */
import { randomBytes } from "node:crypto";
import type { NewEvent, OutboxEvent, SessionRecord } from "../model/records.js";
import type { WebhookEventType } from "../model/webhooks.js";

/** The id of the environment a session runs in when none was prepared for it (the official dialect reports it too). */
const LOCAL_ENVIRONMENT_ID = "env_local";

/**
 * `environment_type` (and `environment_id` when there is one) of a session, as the official events carry them: the
 * same as its `environment` (none, the environment prepared for it, or this server's own workspace).
 */
export function environmentData(s: Pick<SessionRecord, "extra">): Record<string, unknown> {
  if (s.extra.environment === "none") return { environment_type: "none" };
  if (s.extra.environment === "openai_hosted" && typeof s.extra.environment_id === "string") {
    return { environment_type: "openai_hosted", environment_id: s.extra.environment_id };
  }
  return { environment_type: "self_hosted", environment_id: LOCAL_ENVIRONMENT_ID };
}

/** The webhook event of a session's status (`agent.session.<status>`), with its data. */
export function sessionWebhookEvent(s: SessionRecord): {
  type: WebhookEventType;
  data: Record<string, unknown>;
} {
  switch (s.status) {
    case "in_progress":
      return { type: "agent.session.in_progress", data: { id: s.id, ...environmentData(s) } };
    case "requires_action":
      // The kind of the first action it waits for; the session has the details.
      return {
        type: "agent.session.action_required",
        data: { id: s.id, required_action: { type: s.required_actions[0]?.type ?? "function_call" } },
      };
    case "failed":
      return { type: "agent.session.failed", data: { id: s.id, ...environmentData(s) } };
    default:
      return { type: "agent.session.idle", data: { id: s.id, ...environmentData(s) } };
  }
}

export const newEventId = (): string => `evt_${randomBytes(12).toString("hex")}`;

/**
 * The webhook events among a batch of log events about to be appended, with the index of the log event each one
 * comes from: a session's creation, each of its status changes, and each repository output.
 */
export function outboxEvents(
  sessionId: string,
  events: readonly NewEvent[],
): Array<OutboxEvent & { index: number }> {
  const out: Array<OutboxEvent & { index: number }> = [];
  events.forEach((e, index) => {
    const ev = e.event;
    if (ev.type === "session.created") {
      const s = ev.data.session;
      out.push({
        index,
        event_id: newEventId(),
        type: "agent.session.created",
        created_at: e.created_at,
        data: { id: s.id, ...environmentData(s) },
      });
    } else if (ev.type === "repository.output") {
      const i = ev.data.item;
      out.push({
        index,
        event_id: newEventId(),
        type: "agent.session.repository.output",
        created_at: e.created_at,
        data: {
          id: sessionId,
          turn_id: e.turn_id,
          repository: i.repository,
          url: i.url,
          branch: i.branch,
          commit: i.commit,
          push: i.push,
          error: i.error,
        },
      });
    } else if (ev.type === "session.status") {
      out.push({
        index,
        event_id: newEventId(),
        created_at: e.created_at,
        ...sessionWebhookEvent(ev.data.session),
      });
    }
  });
  return out;
}

/**
 * The webhook event of an environment's status change (`agent.environment.<status>`), or null for statuses no event
 * tells of. Both stores write it in the same statement or transaction as the status (their `updateEnvironment`),
 * once per change, whether or not a session has the environment yet.
 */
export function environmentWebhookEvent(
  environmentId: string,
  status: string | undefined,
  at: number,
): OutboxEvent | null {
  const type =
    status === "ready"
      ? "agent.environment.ready"
      : status === "failed"
        ? "agent.environment.failed"
        : status === "expired"
          ? "agent.environment.expired"
          : null;
  return type && { event_id: newEventId(), type, created_at: at, data: { id: environmentId } };
}

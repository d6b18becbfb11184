/**
 * Turn traces read from the store: a turn's events (from its first one to its end), its spans, and the official
 * `agent.session.trace` pages of `GET /v1/agents/sessions/{id}/traces`.
 */
import type { Resource } from "@opentelemetry/resources";
import { TERMINAL_TURN_EVENTS } from "../../model/events.js";
import type { EventRecord, Queries, TurnRecord, TurnStatus } from "../../store/types.js";
import { otlpJson } from "./otlp.js";
import { type SpanData, type SpanLinkData, turnSpans } from "./trace-model.js";

const PAGE = 1000;

/** A trace is published once its turn has ended. */
const ENDED: ReadonlySet<TurnStatus> = new Set<TurnStatus>([
  "completed",
  "failed",
  "cancelled",
  "interrupted",
]);
export const hasEnded = (t: TurnRecord) => ENDED.has(t.status);

/** A turn of the session itself (a subagent's turns are part of the trace of the root turn they ran in). */
export const isRoot = (t: TurnRecord) => !t.subagent_id;

/**
 * The turn's events in log order, up to its end: its own, and those of the subagent turns that started while it
 * ran (deltas left out: a trace does not need them).
 */
export async function turnEvents(store: Queries, sessionId: string, turnId: string): Promise<EventRecord[]> {
  const first = await store.firstEventSeqOfTurn(sessionId, turnId);
  if (first === undefined) return [];
  const out: EventRecord[] = [];
  const subagentTurns = new Set<string>();
  let after = first - 1;
  for (;;) {
    const page = await store.readEvents(sessionId, after, PAGE);
    for (const e of page) {
      if (!e.turn_id || e.type === "item.delta") continue;
      const own = e.turn_id === turnId;
      if (!own) {
        if (e.type === "turn.started" && e.data.turn.subagent_id) subagentTurns.add(e.turn_id);
        if (!subagentTurns.has(e.turn_id)) continue;
      }
      out.push(e);
      if (own && TERMINAL_TURN_EVENTS.has(e.type)) return out;
    }
    if (page.length < PAGE) return out;
    after = page.at(-1)!.seq;
  }
}

/** The spans of an ended turn, from the store. */
export async function storedTurnSpans(
  store: Queries,
  sessionId: string,
  turn: TurnRecord,
  links: SpanLinkData[] = [],
): Promise<SpanData[]> {
  return turnSpans({ sessionId, turn, events: await turnEvents(store, sessionId, turn.id), links });
}

/** The official `SessionTrace`. */
export interface SessionTrace {
  id: string;
  object: "agent.session.trace";
  session_id: string;
  created_at: number;
  otlp: Record<string, unknown>;
}

/** A response holds at most this much trace JSON (as the official API), but always at least one trace. */
export const MAX_PAGE_BYTES = 16 * 1024 * 1024;

export interface TraceListQuery {
  after?: string | undefined;
  limit?: number | undefined;
  order?: "asc" | "desc" | undefined;
}

/**
 * A cursor page of the session's root-turn traces, ordered by turn creation (default newest first). Turns still
 * running are skipped (unpublished), and the page is filled from the following turns, so it is only short at the
 * end.
 */
export async function listTraces(
  store: Queries,
  resource: Resource,
  sessionId: string,
  q: TraceListQuery,
  maxBytes = MAX_PAGE_BYTES,
) {
  const limit = q.limit ?? 20;
  const order = q.order ?? "desc";
  const data: SessionTrace[] = [];
  let bytes = 0;
  let after = q.after;
  let hasMore = false;
  fill: for (;;) {
    const p = await store.listTurns(sessionId, { limit, order, ...(after !== undefined ? { after } : {}) });
    for (const turn of p.data) {
      if (!hasEnded(turn) || !isRoot(turn)) {
        after = turn.id;
        continue;
      }
      if (data.length === limit) {
        hasMore = true;
        break fill;
      }
      const trace: SessionTrace = {
        id: turn.id,
        object: "agent.session.trace",
        session_id: sessionId,
        created_at: Math.floor(turn.created_at),
        otlp: otlpJson(await storedTurnSpans(store, sessionId, turn), resource),
      };
      const size = JSON.stringify(trace).length;
      if (data.length > 0 && bytes + size > maxBytes) {
        hasMore = true;
        break fill;
      }
      bytes += size;
      data.push(trace);
      after = turn.id;
    }
    if (!p.has_more || p.data.length === 0) break;
  }
  return {
    object: "list" as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}

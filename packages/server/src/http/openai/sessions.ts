import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { AppDeps } from "../../app.js";
import { badRequest, conflict, unprocessable } from "../../domain/errors.js";
import { EventType, TERMINAL_TURN_EVENTS } from "../../domain/events.js";
import { parseGoalOption } from "../../domain/goals.js";
import { hasContent, parseInput, type TurnInput } from "../../domain/input.js";
import type { SessionFields } from "../../domain/sessions.js";
import type { EventRecord, SessionRecord } from "../../store/types.js";
import * as openai from "../../wire/openai.js";
import { idempotent } from "../idempotency.js";
import type { Handlers } from "../routes.js";
import { type Cursor, type Frame, parseCursor, streamLog } from "../sse.js";
import { ListQuery, Metadata, parse } from "../validate.js";
import { settingsOf } from "./agents.js";

const AgentOverrides = z
  .object({
    model: z.string().min(1).optional(),
    instructions: z.string().nullable().optional(),
    tools: z
      .array(z.object({ type: z.string() }).loose())
      .nullable()
      .optional(),
    name: z.string().nullable().optional(),
    reasoning: z.object({}).loose().nullable().optional(),
    text: z.object({}).loose().nullable().optional(),
    service_tier: z.string().nullable().optional(),
    multi_agent: z.object({ enabled: z.boolean() }).loose().nullable().optional(),
    compaction: z.object({}).loose().nullable().optional(),
    experimental: z.object({}).loose().nullable().optional(),
  })
  .loose();

const Environment = z.object({ type: z.enum(["none", "self_hosted", "openai_hosted"]) }).loose();

const SessionCreate = z.object({
  agent_id: z.string().min(1).nullable().optional(),
  agent: AgentOverrides.nullable().optional(),
  environment: Environment.nullable().optional(),
  input: z.unknown().optional(),
  metadata: Metadata.nullable().optional(),
  stream: z.boolean().nullable().optional(),
  review: z.enum(["none", "auto_review"]).nullable().optional(),
  spend_control: z.unknown().optional(),
  vault_ids: z.array(z.string()).nullable().optional(),
});

const SessionUpdate = z.object({
  agent: AgentOverrides.nullable().optional(),
  metadata: Metadata.nullable().optional(),
  review: z.enum(["none", "auto_review"]).nullable().optional(),
  spend_control: z.unknown().optional(),
});

const InputEvent = z.discriminatedUnion("type", [
  z.object({ type: z.literal("agent.session.input.message"), input: z.unknown() }).loose(),
  z.object({ type: z.literal("agent.session.input.cancel") }).loose(),
  z
    .object({ type: z.literal("agent.session.input.tool_result"), turn_id: z.string(), call_id: z.string() })
    .loose(),
  z.object({ type: z.literal("agent.session.input.computer_use_approval_request_result") }).loose(),
]);
const EventsBody = z.object({ events: z.array(InputEvent).min(1).max(100) });

type Params = { session_id: string };

/** Official input: a string or messages; it must contain something. */
export function officialInput(raw: unknown, where = "input"): TurnInput {
  const input = parseInput(raw, where);
  if (!hasContent(input))
    throw badRequest(`'${where}' must contain at least one non-empty input_text or input_image`, where);
  return input;
}

function metadataFilter(query: Record<string, unknown>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    const m = /^metadata\[(.+)\]$/.exec(k);
    if (m?.[1] && typeof v === "string") out[m[1]] = v;
  }
  const nested = query.metadata;
  if (nested && typeof nested === "object") {
    for (const [k, v] of Object.entries(nested)) if (typeof v === "string") out[k] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

export function openaiSessionHandlers(deps: AppDeps): Handlers {
  const { sessions, hub, store } = deps;

  const render =
    (s: SessionRecord) =>
    (e: EventRecord): Frame[] =>
      openai.renderEvent(e, s.agent_id).map((data) => ({ event: data.type as string, data }));

  /**
   * The session-level stream: replays from the cursor (or the running turn's start), then tails live. An idle (or
   * failed) session starts with its current state (`agent.session.idle|failed`), which takes the place of the
   * last logged event so that it carries that event's SSE `id:` (resuming from it continues after that event).
   */
  const sessionStream = (
    req: FastifyRequest,
    reply: FastifyReply,
    s: SessionRecord,
    opts: { from?: Cursor; until?: (e: EventRecord) => boolean } = {},
  ) => {
    const cursor = opts.from ?? parseCursor(req);
    let from: Cursor;
    let renderer = render(s);
    if (cursor) from = cursor;
    else if (s.active_turn_id) {
      const first = store.firstEventSeqOfTurn(s.id, s.active_turn_id) ?? store.lastEventSeq(s.id) + 1;
      from = { seq: first - 1, frame: Number.POSITIVE_INFINITY };
    } else {
      const seq = store.lastEventSeq(s.id);
      // frame -1: the event `seq` itself is delivered (no frame of it is skipped), rendered as the state.
      from = { seq, frame: -1 };
      const type = `agent.session.${s.status}`;
      const state = { type, event_id: `evt_${s.id.slice(5)}_${seq}_state`, session: openai.sessionObject(s) };
      const logged = renderer;
      renderer = (e) => (e.seq === seq ? [{ event: type, data: state }] : logged(e));
    }
    return streamLog(reply, {
      hub,
      sessionId: s.id,
      from,
      render: renderer,
      // The idle-state frame (event `from.seq`) is never shared; every other frame depends on the agent id only.
      renderKey: `openai:${s.agent_id ?? ""}`,
      done: true,
      ...(opts.until ? { until: opts.until } : {}),
    });
  };

  /** Ends after the session status event that follows the turn's terminal event. */
  const untilSettled = (turnId: string) => {
    let ended = false;
    return (e: EventRecord) => {
      if (e.turn_id === turnId && TERMINAL_TURN_EVENTS.has(e.type)) ended = true;
      return ended && e.type === EventType.SessionStatus;
    };
  };

  /**
   * A message to an idle session starts a turn; during a turn it steers that turn. When the running turn is
   * already ending (being cancelled, or its engine turn just finished so the engine refuses the steer with "no
   * active turn to steer"), the message starts the next turn once that one has ended: a valid message is never
   * refused (or answered with a 5xx) because of that race.
   */
  const deliver = async (sessionId: string, input: TurnInput): Promise<void> => {
    for (;;) {
      const running = sessions.runner.activeTurn(sessionId);
      if (!running) {
        sessions.startTurn(sessionId, input);
        return;
      }
      if (await sessions.steer(sessionId, input)) return;
      await sessions.waitForTurn(sessionId, running.id);
    }
  };

  return {
    createSession: async (req, reply) => {
      const b = parse(SessionCreate, req.body);
      if (b.environment?.type === "openai_hosted") {
        throw unprocessable(
          "This server runs sessions in its own workspace: use environment {type: 'none'} or {type: 'self_hosted'}",
          "environment.type",
        );
      }
      const a = b.agent ?? {};
      const fields: SessionFields = {
        ...(b.agent_id ? { agent_id: b.agent_id } : {}),
        ...(a.model ? { model: a.model } : {}),
        ...(a.instructions !== undefined ? { instructions: a.instructions } : {}),
        ...(a.tools ? { tools: a.tools } : {}),
        ...(a.name !== undefined ? { name: a.name } : {}),
        metadata: b.metadata ?? {},
        extra: { ...settingsOf(a), ...(b.review ? { review: b.review } : {}) },
      };
      const input = b.input === undefined || b.input === null ? null : officialInput(b.input);
      if (b.stream && !input) throw badRequest("'input' is required when 'stream' is true", "input");
      const session = sessions.create(fields, { startingTurn: input !== null });
      const turn = input ? sessions.startTurn(session.id, input) : null;
      if (b.stream && turn) {
        return sessionStream(req, reply, session, {
          from: { seq: 0, frame: Number.POSITIVE_INFINITY },
          until: untilSettled(turn.id),
        });
      }
      return openai.sessionObject(sessions.get(session.id));
    },

    listSessions: async (req) => {
      const query = (req.query ?? {}) as Record<string, unknown>;
      const q = parse(ListQuery.extend({ agent_id: z.string().optional() }).loose(), query, "query");
      const metadata = metadataFilter(query);
      const p = sessions.list({
        ...(q.limit ? { limit: q.limit } : {}),
        ...(q.after ? { after: q.after } : {}),
        ...(q.order ? { order: q.order } : {}),
        ...(q.agent_id ? { agent_id: q.agent_id } : {}),
        ...(metadata ? { metadata } : {}),
      });
      return openai.page({ data: p.data.map(openai.sessionObject), has_more: p.has_more });
    },

    getSession: async (req: FastifyRequest<{ Params: Params }>) =>
      openai.sessionObject(sessions.get(req.params.session_id)),

    updateSession: async (req: FastifyRequest<{ Params: Params }>) => {
      const b = parse(SessionUpdate, req.body);
      const a = b.agent ?? {};
      return openai.sessionObject(
        sessions.update(req.params.session_id, {
          ...(a.model ? { model: a.model } : {}),
          ...(a.instructions !== undefined ? { instructions: a.instructions } : {}),
          ...(a.tools !== undefined ? { tools: a.tools ?? [] } : {}),
          ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
          extra: { ...settingsOf(a), ...(b.review ? { review: b.review } : {}) },
        }),
      );
    },

    deleteSession: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      if (s.active_turn_id) {
        throw conflict(
          "The session has a running turn: cancel it first (agent.session.input.cancel)",
          "session_busy",
        );
      }
      await sessions.delete(s.id);
      return { id: s.id, object: "agent.session.deleted", deleted: true };
    },

    postEvents: async (req: FastifyRequest<{ Params: Params }>, reply) => {
      const s = sessions.get(req.params.session_id);
      const b = parse(EventsBody, req.body);
      return idempotent(store, s.id, req, reply, async () => {
        for (const [i, ev] of b.events.entries()) {
          switch (ev.type) {
            case "agent.session.input.message": {
              const input = officialInput(ev.input, `events[${i}].input`);
              const goal = parseGoalOption((ev as { goal?: unknown }).goal, `events[${i}].goal`);
              const running = sessions.runner.activeTurn(s.id);
              if (goal) {
                if (running) throw conflict("Cannot start a goal while a turn is running", "session_busy");
                sessions.startTurn(s.id, input, { goal: { mode: "input", caps: goal } });
                break;
              }
              await deliver(s.id, input);
              break;
            }
            case "agent.session.input.cancel":
              await sessions.cancel(s.id);
              break;
            case "agent.session.input.tool_result":
              throw badRequest(
                `Unknown pending tool call: ${ev.call_id}`,
                `events[${i}].call_id`,
                "invalid_request_error",
              );
            default:
              throw badRequest(
                `events[${i}]: ${ev.type} is not supported by this server`,
                `events[${i}].type`,
              );
          }
        }
        return { status: 202, body: undefined };
      });
    },

    streamEvents: async (req: FastifyRequest<{ Params: Params }>, reply) =>
      sessionStream(req, reply, sessions.get(req.params.session_id)),
  };
}

import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { AppDeps } from "../../app.js";
import { badRequest, conflict } from "../../domain/errors.js";
import { TERMINAL_TURN_EVENTS } from "../../domain/events.js";
import { parseGoalOption } from "../../domain/goals.js";
import { hasContent, parseInput, type TurnInput } from "../../domain/input.js";
import type { SessionFields } from "../../domain/sessions.js";
import type { EventRecord, ItemRecord, SessionRecord } from "../../store/types.js";
import * as template from "../../wire/template.js";
import type { Handlers } from "../routes.js";
import { type Frame, parseCursor, streamLog } from "../sse.js";
import { Metadata, parse } from "../validate.js";
import { allPages } from "./all-pages.js";

const InlineAgent = z
  .object({
    model: z.string().optional(),
    instructions: z.string().nullable().optional(),
    tools: z.array(z.unknown()).nullable().optional(),
    name: z.string().nullable().optional(),
  })
  .loose();

const CreateBody = z
  .object({
    agent: z
      .union([z.string().min(1), InlineAgent])
      .nullable()
      .optional(),
    agent_id: z.string().min(1).optional(),
    input: z.unknown().optional(),
    stream: z.boolean().optional(),
    metadata: Metadata.nullable().optional(),
    goal: z.unknown().optional(),
  })
  .loose();

const UpdateBody = z
  .object({
    model: z.string().optional(),
    instructions: z.string().nullable().optional(),
    metadata: Metadata.nullable().optional(),
  })
  .loose();

const EventsBody = z
  .object({
    input: z.unknown().optional(),
    type: z.string().optional(),
    content: z.unknown().optional(),
    stream: z.boolean().optional(),
    goal: z.unknown().optional(),
    steer: z.boolean().optional(),
  })
  .loose();

/** Template extension: `{type:"agent.session.input.cancel"}` or `{steer:true, input}` act on the running turn. */
function controlRequest(body: unknown): "cancel" | "steer" | null {
  if (!body || typeof body !== "object") return null;
  const b = body as { type?: unknown; steer?: unknown };
  if (b.type === "agent.session.input.cancel") return "cancel";
  return b.steer === true ? "steer" : null;
}

type Params = { session_id: string };

/** How many items GET session shows as `output` (the original service's window). */
const OUTPUT_WINDOW = 5;

export function renderTemplate(e: EventRecord): Frame[] {
  const f = template.renderEvent(e);
  return f ? [f] : [];
}

/** Input of a template turn, or null when none was given (empty text counts as none, like the original). */
function optionalInput(raw: unknown): TurnInput | null {
  if (raw === undefined || raw === null) return null;
  const input = parseInput(raw);
  return hasContent(input) ? input : null;
}

export function templateSessionHandlers(deps: AppDeps): Handlers {
  const { sessions, hub, store } = deps;

  /**
   * The last 5 items the dialect shows (user messages are not shown: a run of turns without output of their
   * own must not push earlier output out of the window).
   */
  const lastItems = (s: SessionRecord): ItemRecord[] =>
    store
      .listItems(s.id, { order: "desc", limit: OUTPUT_WINDOW, exclude_types: template.HIDDEN_ITEM_TYPES })
      .data.reverse();

  /** The turn of the first frame after `seq` (events the dialect does not show are skipped), if any. */
  const nextUnseenTurn = (sessionId: string, seq: number): string | null => {
    const pageSize = 500;
    for (let after = seq; ; ) {
      const page = store.readEvents(sessionId, after, pageSize);
      const next = page.find((e) => e.turn_id && renderTemplate(e).length > 0);
      if (next) return next.turn_id;
      if (page.length < pageSize) return null;
      after = page.at(-1)!.seq;
    }
  };

  /** Streams one turn from the log: from `fromSeq` until that turn's terminal event. */
  const streamTurn = (
    req: FastifyRequest,
    reply: FastifyReply,
    sessionId: string,
    turnId: string,
    fromSeq: number,
  ) =>
    streamLog(reply, {
      hub,
      sessionId,
      from: parseCursor(req) ?? { seq: fromSeq, frame: Number.POSITIVE_INFINITY },
      render: renderTemplate,
      renderKey: "template",
      until: (e) => e.turn_id === turnId && TERMINAL_TURN_EVENTS.has(e.type),
    });

  return {
    createSession: async (req, reply) => {
      const b = parse(CreateBody, req.body);
      let fields: SessionFields = { metadata: b.metadata ?? {} };
      if (typeof b.agent === "string" || b.agent_id) fields.agent_id = (b.agent_id ?? b.agent) as string;
      else if (b.agent) {
        fields = {
          ...fields,
          ...(b.agent.model ? { model: b.agent.model } : {}),
          ...(b.agent.instructions !== undefined ? { instructions: b.agent.instructions } : {}),
          ...(b.agent.tools ? { tools: b.agent.tools } : {}),
          ...(b.agent.name !== undefined ? { name: b.agent.name } : {}),
        };
      }
      const input = optionalInput(b.input);
      const goal = parseGoalOption(b.goal);
      if (goal && !input) throw badRequest("A goal needs input: the objective", "input");
      const session = sessions.create(fields, { startingTurn: input !== null });
      if (!input) return template.sessionObject(session);
      const turn = sessions.startTurn(session.id, input, goal ? { goal: { mode: "input", caps: goal } } : {});
      if (b.stream === true) return streamTurn(req, reply, session.id, turn.id, 0);
      await sessions.waitForTurn(session.id, turn.id);
      const done = sessions.get(session.id);
      return template.sessionWithOutput(done, lastItems(done));
    },

    listSessions: async () => ({
      object: "list",
      data: allPages((o) => sessions.list(o)).map(template.sessionObject),
    }),

    getSession: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      return template.sessionWithOutput(s, lastItems(s));
    },

    updateSession: async (req: FastifyRequest<{ Params: Params }>) => {
      const b = parse(UpdateBody, req.body);
      const s = sessions.update(req.params.session_id, {
        ...(b.model !== undefined ? { model: b.model } : {}),
        ...(b.instructions !== undefined ? { instructions: b.instructions } : {}),
        ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
      });
      return template.sessionObject(s);
    },

    deleteSession: async (req: FastifyRequest<{ Params: Params }>) => {
      await sessions.delete(req.params.session_id);
      return { id: req.params.session_id, object: "session", deleted: true };
    },

    postEvents: async (req: FastifyRequest<{ Params: Params }>, reply) => {
      const id = req.params.session_id;
      const session = sessions.get(id);
      const control = controlRequest(req.body);
      if (control === "cancel") {
        const cancelled = await sessions.cancel(id);
        return {
          status: sessions.get(id).status,
          turn_id: cancelled?.id ?? null,
          cancelled: cancelled !== null,
        };
      }
      if (control === null) sessions.assertIdle(session);
      const b = parse(EventsBody, req.body);
      const raw = b.input ?? (b.type === "agent.session.input.message" ? b.content : undefined);
      const input = optionalInput(raw);
      if (!input) throw badRequest("Missing input text", "input");
      if (control === "steer") {
        const steered = await sessions.steer(id, input);
        if (!steered) throw conflict("No active turn to steer", "no_active_turn");
        return { turn_id: steered.id, steered: true };
      }
      const goal = parseGoalOption(b.goal);
      const fromSeq = store.lastEventSeq(id);
      const turn = sessions.startTurn(id, input, goal ? { goal: { mode: "input", caps: goal } } : {});
      if (b.stream === false) {
        await sessions.waitForTurn(id, turn.id);
        const done = sessions.get(id);
        return template.sessionWithOutput(done, lastItems(done));
      }
      return streamTurn(req, reply, id, turn.id, fromSeq);
    },

    streamEvents: async (req: FastifyRequest<{ Params: Params }>, reply) => {
      const id = req.params.session_id;
      const session = sessions.get(id);
      const cursor = parseCursor(req);
      // A cursor past the end of the log cannot come from this log; a stream from it would never send anything.
      if (cursor && cursor.seq > store.lastEventSeq(id))
        throw badRequest(`Last-Event-ID ${cursor.seq} is ahead of this session's event log`, "Last-Event-ID");
      const active = sessions.runner.activeTurn(id);
      if (!active) {
        // A client that reconnects after the turn ended still gets what it missed (and, when it missed
        // nothing, the idle answer rather than a stream that would wait for a terminal event already sent).
        const missed = cursor ? nextUnseenTurn(id, cursor.seq) : null;
        if (missed) return streamTurn(req, reply, id, missed, cursor!.seq);
        return { status: template.templateStatus(session), message: "No active turn" };
      }
      const first = store.firstEventSeqOfTurn(id, active.id) ?? store.lastEventSeq(id);
      return streamTurn(req, reply, id, active.id, Math.max(0, first - 1));
    },

    listItems: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      const items = allPages((o) =>
        store.listItems(s.id, { ...o, exclude_types: template.HIDDEN_ITEM_TYPES }),
      );
      return { object: "list", data: items.flatMap((i) => template.itemObject(i) ?? []) };
    },
  };
}

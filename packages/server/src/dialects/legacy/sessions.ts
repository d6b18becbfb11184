import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { SessionChanges } from "../../application/sessions.js";
import type { App } from "../../http/app-types.js";
import { type Frame, parseCursor, streamLog } from "../../http/sse.js";
import { Metadata, parse, SessionParams } from "../../http/validate.js";
import { badRequest, conflict } from "../../kernel/errors.js";
import { parseApproval, parseToolResult } from "../../model/answers.js";
import { isTurnEnd } from "../../model/events.js";
import { parseGoalOption } from "../../model/goal-caps.js";
import { hasContent, parseInput, type TurnInput } from "../../model/input.js";
import type { EventRecord, ItemRecord, SessionRecord } from "../../model/records.js";
import { turnHolding } from "../../model/session-lock.js";
import { APPROVAL_POLICIES } from "../../model/settings.js";
import { approvalSetting } from "./agents.js";
import { allPages } from "./all-pages.js";
import * as template from "./render.js";

const InlineAgent = z
  .object({
    model: z.string().optional(),
    instructions: z.string().nullable().optional(),
    tools: z.array(z.unknown()).nullable().optional(),
    name: z.string().nullable().optional(),
    approval_policy: z.enum(APPROVAL_POLICIES).nullable().optional(),
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
    workspace_mode: z.enum(["shared", "session"]).optional(),
  })
  .loose();

const UpdateBody = z
  .object({
    model: z.string().optional(),
    instructions: z.string().nullable().optional(),
    metadata: Metadata.nullable().optional(),
    approval_policy: z.enum(APPROVAL_POLICIES).nullable().optional(),
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

const ActionParams = SessionParams.extend({ action_id: z.string().min(1).max(200) });
const ActionBody = z
  .object({
    output: z.unknown().optional(),
    error: z.string().nullable().optional(),
    success: z.boolean().optional(),
    decision: z.string().optional(),
    content: z.unknown().optional(),
  })
  .strict();

/** Template extension: `{type:"agent.session.input.cancel"}` or `{steer:true, input}` act on the running turn. */
function controlRequest(body: unknown): "cancel" | "steer" | null {
  if (!body || typeof body !== "object") return null;
  const b = body as { type?: unknown; steer?: unknown };
  if (b.type === "agent.session.input.cancel") return "cancel";
  return b.steer === true ? "steer" : null;
}

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

export function sessionRoutes(app: App, ops: Application): void {
  const { sessions, streams, history } = ops;

  /**
   * The last 5 items the dialect shows (user messages are not shown: a run of turns without output of their
   * own must not push earlier output out of the window; items still running are not shown either).
   */
  const lastItems = async (s: SessionRecord): Promise<ItemRecord[]> =>
    (
      await history.items(s, {
        order: "desc",
        limit: OUTPUT_WINDOW,
        exclude_types: template.HIDDEN_ITEM_TYPES,
        states: ["completed", "incomplete"],
      })
    ).data.reverse();

  /** The turn of the first frame after `seq` (events the dialect does not show are skipped), if any. */
  const nextUnseenTurn = async (sessionId: string, seq: number): Promise<string | null> => {
    const pageSize = 500;
    for (let after = seq; ; ) {
      const page = await streams.events(sessionId, after, pageSize);
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
      ...streams.tail,
      sessionId,
      from: parseCursor(req, sessionId) ?? { seq: fromSeq, frame: Number.POSITIVE_INFINITY },
      render: renderTemplate,
      renderKey: "template",
      until: (e) => isTurnEnd(e, turnId),
      endFrame: (reason) => ({ event: "error", data: template.streamEndedError(reason) }),
    });

  const finished = async (sessionId: string, turnId: string) => {
    await sessions.waitFor(sessionId, turnId);
    const done = await history.current(sessionId);
    return done ? template.sessionWithOutput(done, await lastItems(done)) : null;
  };

  app.post("/v1/agents/sessions", { schema: { body: CreateBody } }, async (req, reply) => {
    const b = req.body;
    let fields: SessionChanges = { metadata: b.metadata ?? {} };
    if (typeof b.agent === "string" || b.agent_id) fields.agent_id = (b.agent_id ?? b.agent) as string;
    else if (b.agent) {
      fields = {
        ...fields,
        ...(b.agent.model ? { model: b.agent.model } : {}),
        ...(b.agent.instructions !== undefined ? { instructions: b.agent.instructions } : {}),
        ...(b.agent.tools ? { tools: { raw: b.agent.tools, strict: false, where: "agent.tools" } } : {}),
        ...(b.agent.name !== undefined ? { name: b.agent.name } : {}),
        ...approvalSetting(b.agent),
      };
    }
    const input = optionalInput(b.input);
    const goal = parseGoalOption(b.goal);
    if (goal && !input) throw badRequest("A goal needs input: the objective", "input");
    const { session, sent } = await sessions.create(req.scope, {
      fields,
      workspace: b.workspace_mode,
      dialectDefault: "shared",
      input,
      goal,
    });
    if (!sent) return template.sessionObject(session);
    const { turn } = sent;
    if (b.stream === true) return streamTurn(req, reply, session.id, turn.id, 0);
    return finished(session.id, turn.id);
  });

  app.get("/v1/agents/sessions", async (req) => ({
    object: "list",
    data: (await allPages((o) => sessions.list(req.scope, o))).map(template.sessionObject),
  }));

  app.get("/v1/agents/sessions/:session_id", { schema: { params: SessionParams } }, async (req) => {
    const s = await sessions.get(req.scope, req.params.session_id);
    return template.sessionWithOutput(s, await lastItems(s));
  });

  app.post(
    "/v1/agents/sessions/:session_id",
    { schema: { params: SessionParams, body: UpdateBody } },
    async (req) => {
      const b = req.body;
      const s = await sessions.update(req.scope, req.params.session_id, {
        ...(b.model !== undefined ? { model: b.model } : {}),
        ...(b.instructions !== undefined ? { instructions: b.instructions } : {}),
        ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
        ...approvalSetting(b),
      });
      return template.sessionObject(s);
    },
  );

  /**
   * This server's extension: answers a required action of the running turn — a function call (`{output}` or
   * `{success: false, error}`) or an approval request (`{decision: approve | approve_for_session | deny | cancel}`).
   * Returns the session (its remaining `required_actions`).
   */
  app.post(
    "/v1/agents/sessions/:session_id/actions/:action_id",
    { schema: { params: ActionParams, body: ActionBody } },
    async (req) => {
      const session = await sessions.get(req.scope, req.params.session_id);
      const b = req.body;
      const answer = b.decision !== undefined ? parseApproval(b, "body") : parseToolResult(b, "body");
      await sessions.answer(session, req.params.action_id, answer);
      return template.sessionObject(await sessions.get(req.scope, session.id));
    },
  );

  app.delete("/v1/agents/sessions/:session_id", { schema: { params: SessionParams } }, async (req) => {
    await sessions.delete(req.scope, req.params.session_id, { whileRunning: "interrupt" });
    return { id: req.params.session_id, object: "session", deleted: true };
  });

  app.post(
    "/v1/agents/sessions/:session_id/events",
    { schema: { params: SessionParams } },
    async (req, reply) => {
      const id = req.params.session_id;
      const session = await sessions.get(req.scope, id);
      const control = controlRequest(req.body);
      if (control === "cancel") {
        const cancelled = await sessions.cancel(session);
        return {
          status: template.templateStatus(await sessions.get(req.scope, id)),
          turn_id: cancelled?.id ?? null,
          cancelled: cancelled !== null,
        };
      }
      // The contract: a second input during a turn is a 409, whatever the body says.
      if (control === null && sessions.busy(session)) {
        throw conflict("Session has an active turn");
      }
      const b = parseBody(req.body);
      const raw = b.input ?? (b.type === "agent.session.input.message" ? b.content : undefined);
      const input = optionalInput(raw);
      if (!input) throw badRequest("Missing input text", "input");
      if (control === "steer") {
        const steered = await sessions.steer(session, input);
        if (!steered) throw conflict("No active turn to steer", "no_active_turn");
        return { turn_id: steered.id, steered: true };
      }
      const goal = parseGoalOption(b.goal);
      const fromSeq = await streams.position(id);
      const { turn } = await sessions.send(session, input, { whileBusy: "refuse", goal });
      if (b.stream === false) return finished(id, turn.id);
      return streamTurn(req, reply, id, turn.id, fromSeq);
    },
  );

  app.get(
    "/v1/agents/sessions/:session_id/events",
    { schema: { params: SessionParams } },
    async (req, reply) => {
      const id = req.params.session_id;
      const session = await sessions.get(req.scope, id);
      const cursor = parseCursor(req, id);
      const last = await streams.position(id);
      // A cursor past the end of the log cannot come from this log; a stream from it would never send anything.
      if (cursor && cursor.seq > last) {
        throw badRequest(`Last-Event-ID ${cursor.seq} is ahead of this session's event log`, "Last-Event-ID");
      }
      const active = turnHolding(session);
      if (!active) {
        // A client that reconnects after the turn ended still gets what it missed (and, when it missed
        // nothing, the idle answer rather than a stream that would wait for a terminal event already sent).
        const missed = cursor ? await nextUnseenTurn(id, cursor.seq) : null;
        if (missed) return streamTurn(req, reply, id, missed, cursor!.seq);
        return { status: template.templateStatus(session), message: "No active turn" };
      }
      return streamTurn(req, reply, id, active, await streams.turnStart(id, active));
    },
  );

  app.get("/v1/agents/sessions/:session_id/items", { schema: { params: SessionParams } }, async (req) => {
    const s = await sessions.get(req.scope, req.params.session_id);
    const items = await allPages((o) =>
      history.items(s, {
        ...o,
        exclude_types: template.HIDDEN_ITEM_TYPES,
        states: ["completed", "incomplete"],
      }),
    );
    return { object: "list", data: items.flatMap((i) => template.itemObject(i) ?? []) };
  });
}

/** The events body, validated after the contract's 409 (which comes first, whatever the body). */
const parseBody = (body: unknown) => parse(EventsBody, body);

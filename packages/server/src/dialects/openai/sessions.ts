import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { SessionChanges } from "../../application/sessions.js";
import type { App } from "../../http/app-types.js";
import { idempotent } from "../../http/idempotency.js";
import { type Cursor, type Frame, parseCursor, streamLog } from "../../http/sse.js";
import { ListQuery, Metadata, SessionParams } from "../../http/validate.js";
import { badRequest } from "../../kernel/errors.js";
import { parseApproval, parseToolResult } from "../../model/answers.js";
import { isTurnEnd } from "../../model/events.js";
import { parseGoalOption } from "../../model/goal-caps.js";
import { hasContent, parseInput, type TurnInput } from "../../model/input.js";
import type { EventRecord, SessionRecord } from "../../model/records.js";
import { Settings, settingsPatch, Tools } from "./agents.js";
import * as openai from "./render.js";

const AgentOverrides = z
  .object({
    model: z.string().min(1).optional(),
    instructions: z.string().nullable().optional(),
    tools: Tools,
    name: z.string().nullable().optional(),
    ...Settings,
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
  workspace_mode: z.enum(["shared", "session"]).optional(),
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
  /** This server's extension: the answer to an `approval_request` required action. */
  z
    .object({
      type: z.literal("agent.session.input.approval_result"),
      action_id: z.string(),
      decision: z.string(),
    })
    .loose(),
  z.object({ type: z.literal("agent.session.input.computer_use_approval_request_result") }).loose(),
]);
const EventsBody = z.object({ events: z.array(InputEvent).min(1).max(100) });

const SessionListQuery = ListQuery.extend({ agent_id: z.string().optional() }).loose();

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

/** Ends after the session status event that follows the turn's terminal event. */
function untilSettled(turnId: string) {
  let ended = false;
  return (e: EventRecord) => {
    if (isTurnEnd(e, turnId)) ended = true;
    return ended && e.type === "session.status";
  };
}

export function sessionRoutes(app: App, ops: Application): void {
  const { sessions, streams } = ops;

  const render =
    (s: SessionRecord) =>
    (e: EventRecord): Frame[] =>
      openai.renderEvent(e, openai.agentIdOf(s)).map((data) => ({ event: data.type, data }));

  /**
   * The session-level stream: replays from the cursor (or the running turn's start), then tails live. An idle
   * session starts with its current state (`agent.session.idle`), which takes the place of the last logged event
   * so that it carries that event's SSE `id:` (resuming from it continues after that event).
   */
  const sessionStream = async (
    req: FastifyRequest,
    reply: FastifyReply,
    s: SessionRecord,
    opts: { from?: Cursor; until?: (e: EventRecord) => boolean } = {},
  ) => {
    let from: Cursor | null = opts.from ?? parseCursor(req, s.id);
    let renderer = render(s);
    if (!from) {
      const start = await streams.start(s);
      if (start.state === "turn") from = { seq: start.seq, frame: Number.POSITIVE_INFINITY };
      else {
        const { seq } = start;
        // frame -1: the event `seq` itself is delivered (no frame of it is skipped), rendered as the state.
        from = { seq, frame: -1 };
        const state = openai.sessionStatusEvent(s, `evt_${s.id.slice(5)}_${seq}_state`);
        const logged = renderer;
        renderer = (e) => (e.seq === seq ? [{ event: state.type, data: state }] : logged(e));
      }
    }
    return streamLog(reply, {
      ...streams.tail,
      sessionId: s.id,
      from,
      render: renderer,
      // The idle-state frame (event `from.seq`) is never shared; every other frame depends on the agent id only.
      renderKey: `openai:${openai.agentIdOf(s)}`,
      done: true,
      endFrame: (reason, lastSeq) => {
        const data = openai.streamEndedEvent(s.id, reason, lastSeq);
        return { event: data.type, data };
      },
      ...(opts.until ? { until: opts.until } : {}),
    });
  };

  app.post("/v1/agents/sessions", { schema: { body: SessionCreate } }, async (req, reply) => {
    const b = req.body;
    const a = b.agent ?? {};
    const fields: SessionChanges = {
      ...(b.agent_id ? { agent_id: b.agent_id } : {}),
      ...(a.model ? { model: a.model } : {}),
      ...(a.instructions !== undefined ? { instructions: a.instructions } : {}),
      ...(a.tools ? { tools: { raw: a.tools, strict: true, where: "agent.tools" } } : {}),
      ...(a.name !== undefined ? { name: a.name } : {}),
      metadata: b.metadata ?? {},
      settings: settingsPatch(a),
      extra: {
        environment: b.environment?.type === "none" ? "none" : "self_hosted",
        ...(b.review ? { review: b.review } : {}),
      },
    };
    const input = b.input === undefined || b.input === null ? null : officialInput(b.input);
    if (b.stream && !input) throw badRequest("'input' is required when 'stream' is true", "input");
    const { session, sent } = await sessions.create(req.scope, {
      fields,
      official: { environment: b.environment, vaultIds: b.vault_ids },
      workspace: b.workspace_mode,
      dialectDefault: "session",
      input,
    });
    if (b.stream && sent) {
      return sessionStream(req, reply, session, {
        from: { seq: 0, frame: Number.POSITIVE_INFINITY },
        until: untilSettled(sent.turn.id),
      });
    }
    return openai.sessionObject(await sessions.get(req.scope, session.id));
  });

  app.get("/v1/agents/sessions", { schema: { querystring: SessionListQuery } }, async (req) => {
    const q = req.query;
    const metadata = metadataFilter(q);
    const p = await sessions.list(req.scope, {
      ...(q.limit ? { limit: q.limit } : {}),
      ...(q.after ? { after: q.after } : {}),
      ...(q.order ? { order: q.order } : {}),
      ...(q.agent_id ? { agent_id: q.agent_id } : {}),
      ...(metadata ? { metadata } : {}),
    });
    return openai.page({ data: p.data.map(openai.sessionObject), has_more: p.has_more });
  });

  app.get("/v1/agents/sessions/:session_id", { schema: { params: SessionParams } }, async (req) =>
    openai.sessionObject(await sessions.get(req.scope, req.params.session_id)),
  );

  app.post(
    "/v1/agents/sessions/:session_id",
    { schema: { params: SessionParams, body: SessionUpdate } },
    async (req) => {
      const b = req.body;
      const a = b.agent ?? {};
      return openai.sessionObject(
        await sessions.update(req.scope, req.params.session_id, {
          ...(a.model ? { model: a.model } : {}),
          ...(a.instructions !== undefined ? { instructions: a.instructions } : {}),
          ...(a.tools !== undefined
            ? { tools: { raw: a.tools ?? [], strict: true, where: "agent.tools" } }
            : {}),
          ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
          settings: settingsPatch(a),
          extra: b.review ? { review: b.review } : {},
        }),
      );
    },
  );

  app.delete("/v1/agents/sessions/:session_id", { schema: { params: SessionParams } }, async (req) => {
    const id = req.params.session_id;
    await sessions.delete(req.scope, id, { whileRunning: "refuse" });
    return { id, object: "agent.session.deleted", deleted: true };
  });

  app.post(
    "/v1/agents/sessions/:session_id/events",
    { schema: { params: SessionParams, body: EventsBody } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const b = req.body;
      return idempotent(ops.idempotency, s.id, req, reply, async () => {
        for (const [i, ev] of b.events.entries()) {
          switch (ev.type) {
            case "agent.session.input.message": {
              const input = officialInput(ev.input, `events[${i}].input`);
              const goal = parseGoalOption((ev as { goal?: unknown }).goal, `events[${i}].goal`);
              // The session as read just now for the first event; after an earlier event, as that one left it.
              const current = i === 0 ? s : await sessions.get(req.scope, s.id);
              await sessions.send(current, input, { whileBusy: "steer", goal });
              break;
            }
            case "agent.session.input.cancel":
              await sessions.cancel(s);
              break;
            case "agent.session.input.tool_result":
              await sessions.answer(
                s,
                ev.call_id,
                parseToolResult({ success: ev.success, output: ev.output, error: ev.error }, `events[${i}]`),
                ev.turn_id,
              );
              break;
            case "agent.session.input.approval_result":
              await sessions.answer(
                s,
                ev.action_id,
                parseApproval({ decision: ev.decision, content: ev.content }, `events[${i}]`),
              );
              break;
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
  );

  app.get(
    "/v1/agents/sessions/:session_id/events",
    { schema: { params: SessionParams } },
    async (req, reply) => sessionStream(req, reply, await sessions.get(req.scope, req.params.session_id)),
  );
}

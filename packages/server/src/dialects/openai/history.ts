import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { ListQuery, SessionParams, TurnParams } from "../../http/validate.js";
import type { SessionRecord } from "../../model/records.js";
import { PageCache, RenderedItems } from "./render/openai-items.js";
import * as openai from "./render.js";

/**
 * Which items a page lists: the session's own (its root agent's: each subagent has its own history), one turn's, or
 * those of a set of turns (a subagent's).
 */
type ItemFilter = Pick<Parameters<Application["history"]["items"]>[1], "turn_id" | "turn_ids" | "root_only">;

const SubagentParams = SessionParams.extend({ subagent_id: z.string().min(1).max(200) });
const SubagentTurnParams = SubagentParams.extend({ turn_id: z.string().min(1).max(200) });

type ListQueryT = {
  limit?: number | undefined;
  after?: string | undefined;
  order?: "asc" | "desc" | undefined;
};

/** Items and turns of a session (read-only history). */
export function historyRoutes(app: App, ops: Application): void {
  itemRoutes(app, ops);
  turnRoutes(app, ops);
}

/** Official item pages (the whole session's, and a turn's). */
function itemRoutes(app: App, { sessions, history, streams }: Application): void {
  const rendered = new RenderedItems();

  /**
   * A page of official items. Engine items with no official rendering are skipped, and the page is filled from
   * the following stored items, so a page is never empty while more renderable items exist (the SDK's cursor
   * pages stop on an empty `data`). `last_id` is the last stored item read: the cursor to continue from. The
   * page is assembled from each item's rendered JSON (finished items never change, so theirs is cached).
   */
  const items = async (s: SessionRecord, q: ListQueryT, only: ItemFilter): Promise<string> => {
    const agentId = openai.agentIdOf(s);
    const limit = q.limit ?? 20;
    // Official default: newest first.
    const order = q.order ?? "desc";
    const data: string[] = [];
    let after = q.after;
    let firstId: string | null = null;
    let lastId: string | null = null;
    let hasMore = false;
    fill: for (;;) {
      const p = await history.items(s, {
        limit,
        order,
        lazy_data: true,
        ...(after !== undefined ? { after } : {}),
        ...only,
      });
      for (const [i, record] of p.data.entries()) {
        if (data.length === limit) {
          hasMore = true;
          break fill;
        }
        firstId ??= record.id;
        lastId = record.id;
        const json = rendered.of(record, agentId);
        if (json !== null) data.push(json);
        if (i === p.data.length - 1) after = record.id;
      }
      if (!p.has_more || p.data.length === 0) break;
      if (data.length === limit) {
        hasMore = true;
        break;
      }
    }
    return (
      `{"object":"list","data":[${data.join(",")}],"first_id":${JSON.stringify(firstId)},` +
      `"last_id":${JSON.stringify(lastId)},"has_more":${hasMore}}`
    );
  };

  /**
   * A page as it stands at the session's current log position: items only change together with an appended
   * event, so a page read again at the same position is the same page (served from memory, and answered 304 to
   * a client that sends back its ETag).
   */
  const pages = new PageCache();
  const page = async (
    req: FastifyRequest,
    reply: FastifyReply,
    s: SessionRecord,
    q: ListQueryT,
    only: ItemFilter = {},
  ) => {
    const sessionId = s.id;
    const seq = await streams.position(sessionId);
    const filter = only.turn_id ?? only.turn_ids?.join(",") ?? (only.root_only ? "root" : "");
    const key = `${sessionId}\u0000${filter}\u0000${q.limit ?? ""}\u0000${q.order ?? ""}\u0000${q.after ?? ""}`;
    const etag = `"${sessionId}.${seq}"`;
    reply.header("etag", etag).type("application/json; charset=utf-8");
    if (req.headers["if-none-match"] === etag) return reply.code(304).send();
    let body = pages.get(key, seq);
    if (body === undefined) {
      body = await items(s, q, only);
      pages.set(key, seq, body);
    }
    return reply.send(body);
  };

  app.get(
    "/v1/agents/sessions/:session_id/items",
    { schema: { params: SessionParams, querystring: ListQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      return page(req, reply, s, req.query, { root_only: true });
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/turns/:turn_id/items",
    { schema: { params: TurnParams, querystring: ListQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const t = await sessions.turn(s, req.params.turn_id);
      return page(req, reply, s, req.query, { turn_id: t.id });
    },
  );

  // Subagents: the child threads the agent's multi-agent tools opened (see domain/turns/subagents.ts).
  app.get(
    "/v1/agents/sessions/:session_id/subagents",
    { schema: { params: SessionParams, querystring: ListQuery } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const q = req.query;
      let all = history.subagents(s);
      if (q.order !== "asc") all = all.reverse();
      const start = q.after ? all.findIndex((a) => a.id === q.after) + 1 : 0;
      const limit = q.limit ?? 20;
      const data = all.slice(start, start + limit);
      return openai.page({
        data: data.map((a) => openai.subagentObject(s.id, openai.agentIdOf(s), a)),
        has_more: start + limit < all.length,
      });
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/subagents/:subagent_id",
    { schema: { params: SubagentParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      return openai.subagentObject(s.id, openai.agentIdOf(s), history.subagent(s, req.params.subagent_id));
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns",
    { schema: { params: SubagentParams, querystring: ListQuery } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const a = history.subagent(s, req.params.subagent_id);
      const q = req.query;
      let all = await history.subagentTurns(s, a.id);
      if (q.order !== "asc") all = all.reverse();
      const start = q.after ? all.findIndex((t) => t.id === q.after) + 1 : 0;
      const limit = q.limit ?? 20;
      return openai.page({
        data: all.slice(start, start + limit).map((t) => openai.turnObject(t, openai.agentIdOf(s))),
        has_more: start + limit < all.length,
      });
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id",
    { schema: { params: SubagentTurnParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const a = history.subagent(s, req.params.subagent_id);
      return openai.turnObject(await history.subagentTurn(s, a.id, req.params.turn_id), openai.agentIdOf(s));
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/subagents/:subagent_id/turns/:turn_id/items",
    { schema: { params: SubagentTurnParams, querystring: ListQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const a = history.subagent(s, req.params.subagent_id);
      const t = await history.subagentTurn(s, a.id, req.params.turn_id);
      return page(req, reply, s, req.query, { turn_id: t.id });
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/subagents/:subagent_id/items",
    { schema: { params: SubagentParams, querystring: ListQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const a = history.subagent(s, req.params.subagent_id);
      return page(req, reply, s, req.query, { turn_ids: await history.subagentTurnIds(s, a.id) });
    },
  );
}

/** Turns: also served to template clients, in the official format (the template had none). */
export function turnRoutes(app: App, { sessions, history }: Application): void {
  app.get(
    "/v1/agents/sessions/:session_id/turns",
    { schema: { params: SessionParams, querystring: ListQuery } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const p = await history.turns(s, req.query);
      return openai.page({
        data: p.data.map((t) => openai.turnObject(t, openai.agentIdOf(s))),
        has_more: p.has_more,
      });
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/turns/:turn_id",
    { schema: { params: TurnParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      return openai.turnObject(await sessions.turn(s, req.params.turn_id), openai.agentIdOf(s));
    },
  );
}

import type { FastifyReply, FastifyRequest } from "fastify";
import type { Core } from "../../core.js";
import * as openai from "../../wire/openai.js";
import { PageCache, RenderedItems } from "../../wire/openai-items.js";
import type { App } from "../app-types.js";
import { ListQuery, SessionParams, TurnParams } from "../validate.js";

type ListQueryT = {
  limit?: number | undefined;
  after?: string | undefined;
  order?: "asc" | "desc" | undefined;
};

/** Items and turns of a session (read-only history). */
export function historyRoutes(app: App, core: Core): void {
  itemRoutes(app, core);
  turnRoutes(app, core);
}

/** Official item pages (the whole session's, and a turn's). */
function itemRoutes(app: App, core: Core): void {
  const { sessions, store } = core;
  const rendered = new RenderedItems();

  /**
   * A page of official items. Engine items with no official rendering are skipped, and the page is filled from
   * the following stored items, so a page is never empty while more renderable items exist (the SDK's cursor
   * pages stop on an empty `data`). `last_id` is the last stored item read: the cursor to continue from. The
   * page is assembled from each item's rendered JSON (finished items never change, so theirs is cached).
   */
  const items = async (sessionId: string, q: ListQueryT, turnId?: string): Promise<string> => {
    const limit = q.limit ?? 20;
    // Official default: newest first.
    const order = q.order ?? "desc";
    const data: string[] = [];
    let after = q.after;
    let firstId: string | null = null;
    let lastId: string | null = null;
    let hasMore = false;
    fill: for (;;) {
      const p = await store.listItems(sessionId, {
        limit,
        order,
        lazy_data: true,
        ...(after !== undefined ? { after } : {}),
        ...(turnId ? { turn_id: turnId } : {}),
      });
      for (const [i, record] of p.data.entries()) {
        if (data.length === limit) {
          hasMore = true;
          break fill;
        }
        firstId ??= record.id;
        lastId = record.id;
        const json = rendered.of(record);
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
    sessionId: string,
    q: ListQueryT,
    turnId?: string,
  ) => {
    const seq = await store.lastEventSeq(sessionId);
    const key = `${sessionId}\u0000${turnId ?? ""}\u0000${q.limit ?? ""}\u0000${q.order ?? ""}\u0000${q.after ?? ""}`;
    const etag = `"${sessionId}.${seq}"`;
    reply.header("etag", etag).type("application/json; charset=utf-8");
    if (req.headers["if-none-match"] === etag) return reply.code(304).send();
    let body = pages.get(key, seq);
    if (body === undefined) {
      body = await items(sessionId, q, turnId);
      pages.set(key, seq, body);
    }
    return reply.send(body);
  };

  app.get(
    "/v1/agents/sessions/:session_id/items",
    { schema: { params: SessionParams, querystring: ListQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      return page(req, reply, s.id, req.query);
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/turns/:turn_id/items",
    { schema: { params: TurnParams, querystring: ListQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const t = await sessions.turn(s, req.params.turn_id);
      return page(req, reply, s.id, req.query, t.id);
    },
  );
}

/** Turns: also served to template clients, in the official format (the template had none). */
export function turnRoutes(app: App, core: Core): void {
  const { sessions, store } = core;
  app.get(
    "/v1/agents/sessions/:session_id/turns",
    { schema: { params: SessionParams, querystring: ListQuery } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const p = await store.listTurns(s.id, req.query);
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

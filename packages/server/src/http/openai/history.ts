import type { FastifyRequest } from "fastify";
import type { AppDeps } from "../../app.js";
import * as openai from "../../wire/openai.js";
import type { Handlers } from "../routes.js";
import { ListQuery, parse } from "../validate.js";

type Params = { session_id: string };
type TurnParams = { session_id: string; turn_id: string };

/** Items and turns of a session (read-only history). */
export function openaiHistoryHandlers(deps: AppDeps): Handlers {
  const { sessions, store } = deps;

  /**
   * A page of official items. Engine items with no official rendering are skipped, and the page is filled from
   * the following stored items, so a page is never empty while more renderable items exist (the SDK's cursor
   * pages stop on an empty `data`). `last_id` is the last stored item read: the cursor to continue from.
   */
  const items = (sessionId: string, query: unknown, turnId?: string) => {
    const q = parse(ListQuery, query, "query");
    const limit = q.limit ?? 20;
    // Official default: newest first.
    const order = q.order ?? "desc";
    const data: Array<{ id: string }> = [];
    let after = q.after;
    let firstId: string | null = null;
    let lastId: string | null = null;
    let hasMore = false;
    fill: for (;;) {
      const p = store.listItems(sessionId, {
        limit,
        order,
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
        const o = openai.itemObject(record);
        if (o) data.push(o as { id: string });
        if (i === p.data.length - 1) after = record.id;
      }
      if (!p.has_more || p.data.length === 0) break;
      if (data.length === limit) {
        hasMore = true;
        break;
      }
    }
    return { object: "list", data, first_id: firstId, last_id: lastId, has_more: hasMore };
  };

  return {
    listItems: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      return items(s.id, req.query);
    },
    listTurns: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      const q = parse(ListQuery, req.query, "query");
      const p = store.listTurns(s.id, q);
      return openai.page({ data: p.data.map((t) => openai.turnObject(t, s.agent_id)), has_more: p.has_more });
    },
    getTurn: async (req: FastifyRequest<{ Params: TurnParams }>) => {
      const s = sessions.get(req.params.session_id);
      return openai.turnObject(sessions.getTurn(s.id, req.params.turn_id), s.agent_id);
    },
    listTurnItems: async (req: FastifyRequest<{ Params: TurnParams }>) => {
      const s = sessions.get(req.params.session_id);
      const t = sessions.getTurn(s.id, req.params.turn_id);
      return items(s.id, req.query, t.id);
    },
  };
}

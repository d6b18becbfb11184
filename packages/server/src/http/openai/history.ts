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

  const items = (sessionId: string, query: unknown, turnId?: string) => {
    const q = parse(ListQuery, query, "query");
    const p = store.listItems(sessionId, {
      ...q,
      order: q.order ?? "asc",
      ...(turnId ? { turn_id: turnId } : {}),
    });
    const data = p.data.flatMap((i) => {
      const o = openai.itemObject(i);
      return o ? [o as { id: string }] : [];
    });
    // The cursor is the last stored item even when it has no official rendering.
    const page = openai.page({ data, has_more: p.has_more });
    return { ...page, last_id: p.data.at(-1)?.id ?? null, first_id: p.data[0]?.id ?? null };
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

/**
 * A session's history as both dialects read it: its items and turns, and those of its subagents (each subagent's
 * turns are the session's turns it ran). The session is one the caller may see (SessionOperations.get).
 */

import { notFound } from "../kernel/errors.js";
import type { ItemRecord, SessionRecord, SubagentRecord, TurnRecord } from "../model/records.js";
import { subagentsOf } from "../model/subagents.js";
import type { ItemListOptions, ListOptions, Page, Store } from "../store/types.js";

export class HistoryOperations {
  constructor(
    private readonly deps: { store: Pick<Store, "listItems" | "listTurns" | "getTurn" | "getSession"> },
  ) {}

  items(s: SessionRecord, opts: ItemListOptions): Promise<Page<ItemRecord>> {
    return this.deps.store.listItems(s.id, opts);
  }

  turns(s: SessionRecord, opts: ListOptions): Promise<Page<TurnRecord>> {
    return this.deps.store.listTurns(s.id, opts);
  }

  /** The session as stored now (null: deleted meanwhile). */
  async current(sessionId: string): Promise<SessionRecord | null> {
    return (await this.deps.store.getSession(sessionId)) ?? null;
  }

  /** The session's subagents, oldest first. */
  subagents(s: SessionRecord): SubagentRecord[] {
    return subagentsOf(s);
  }

  subagent(s: SessionRecord, id: string): SubagentRecord {
    const found = subagentsOf(s).find((a) => a.id === id);
    if (!found) throw notFound(`Subagent ${id} not found`, "subagent_id");
    return found;
  }

  /** The turns a subagent ran (their ids, oldest first). */
  async subagentTurnIds(s: SessionRecord, subagentId: string): Promise<string[]> {
    const ids: string[] = [];
    for (let after: string | undefined; ; ) {
      const p = await this.deps.store.listTurns(s.id, {
        limit: 1000,
        order: "asc",
        ...(after ? { after } : {}),
      });
      for (const t of p.data) if (t.subagent_id === subagentId) ids.push(t.id);
      if (!p.has_more || p.data.length === 0) return ids;
      after = p.data.at(-1)!.id;
    }
  }

  /** A subagent's turns, oldest first (a subagent runs few). */
  async subagentTurns(s: SessionRecord, subagentId: string): Promise<TurnRecord[]> {
    const turns: TurnRecord[] = [];
    for (const id of new Set(await this.subagentTurnIds(s, subagentId))) {
      const t = await this.deps.store.getTurn(s.id, id);
      if (t) turns.push(t);
    }
    return turns;
  }

  async subagentTurn(s: SessionRecord, subagentId: string, turnId: string): Promise<TurnRecord> {
    const t = await this.deps.store.getTurn(s.id, turnId);
    if (!t || t.subagent_id !== subagentId) throw notFound(`Turn ${turnId} not found`, "turn_id");
    return t;
  }
}

/**
 * The engine threads that hold sessions' conversations, as checkpoints use them: where the conversation a
 * checkpoint kept is now (the session's thread, or a thread an earlier restore kept) and how many of its engine
 * turns that point keeps (a plan); making the session's conversation the planned one (its thread reverted in
 * place, or a copy of a kept one); copying a thread through an engine turn (a fork); and putting a thread in the
 * shared rollout store, so that other instances can continue it.
 */
import type { Logger } from "pino";
import type { TurnRunner } from "../../domain/turns/runner.js";
import { ApiError, conflict } from "../../kernel/errors.js";
import type { CheckpointInfo } from "../../model/checkpoints.js";
import type { Rollouts } from "../../platform/cluster/types.js";
import type { Engines } from "../../platform/engine/types.js";
import type { ShadowRepo } from "../../platform/git-store/shadow-repo.js";
import type { SessionRecord, Store } from "../../store/types.js";
import { type ConvPoint, conversationPrefix, type EngineTurnRef, parseConv } from "./conversation.js";

export interface ConversationPlan {
  /** The thread holding the conversation (null: the session has none). */
  thread: string | null;
  turns: EngineTurnRef[];
  prefix: number;
}

export class ConversationThreads {
  constructor(
    private readonly deps: {
      store: Store;
      runner: Pick<TurnRunner, "withThread">;
      engines: Engines;
      rollouts: Pick<Rollouts, "save">;
      logger: Logger;
    },
  ) {}

  /** Which thread holds the conversation at `target`, its engine turns, and how many of them that point keeps. */
  async planConversation(
    s: SessionRecord,
    target: CheckpointInfo,
    repo: ShadowRepo,
  ): Promise<ConversationPlan> {
    const owner = target.meta.session_id ?? s.id;
    if (owner !== s.id) {
      throw conflict(
        `Checkpoint ${target.id} was made by session ${owner}: its conversation is not this session's`,
        "conversation_unavailable",
      );
    }
    const point = parseConv(target.meta.conv);
    const thread = target.meta.conv_thread || s.thread_id;
    if (!thread) return { thread: null, turns: [], prefix: 0 };
    try {
      return await this.planOn(s, thread, point);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === "conversation_unavailable")) throw err;
      // Reverted away since: a restore kept the conversation it replaced (newest first), maybe with that point.
      const kept = (await repo.list())
        .filter((c) => c.meta.session_id === s.id && c.meta.conv_thread && c.meta.conv_thread !== thread)
        .reverse();
      for (const c of kept) {
        try {
          return await this.planOn(s, c.meta.conv_thread as string, point);
        } catch (again) {
          if (!(again instanceof ApiError && again.code === "conversation_unavailable")) throw again;
        }
      }
      throw err;
    }
  }

  private async planOn(s: SessionRecord, thread: string, point: ConvPoint): Promise<ConversationPlan> {
    const turns =
      thread === s.thread_id
        ? await this.deps.runner.withThread(s, (t) => t.turns())
        : await this.listThreadTurns(thread);
    return { thread, turns, prefix: await conversationPrefix(this.deps.store, s.id, point, turns) };
  }

  /** Makes the session's conversation the planned one: reverted in place, or a copy of a kept one. */
  async applyConversation(s: SessionRecord, plan: ConversationPlan): Promise<void> {
    const { runner, store, engines } = this.deps;
    const old = s.thread_id;
    if (plan.thread === old && plan.prefix === plan.turns.length) return;
    if (plan.thread === old && old && plan.prefix > 0) {
      const before = plan.turns[plan.prefix]!.id;
      await runner.withThread(s, (t) => t.revert(before));
      await this.shareThread(old);
      return;
    }
    // Nothing kept (a new conversation), or the conversation kept by an earlier restore: a new thread.
    const next =
      plan.thread && plan.prefix > 0
        ? await this.forkThread(s, plan.thread, plan.turns[plan.prefix - 1]!.id, s.workspace)
        : null;
    await store.updateSession(s.id, { thread_id: next });
    if (old) engines.forget(old);
  }

  /** A copy of `thread` through engine turn `lastTurnId`, for a session working in `cwd` (not loaded). */
  async forkThread(s: SessionRecord, thread: string, lastTurnId: string, cwd: string): Promise<string> {
    const forked =
      thread === s.thread_id
        ? await this.deps.runner.withThread(s, (t) => t.fork({ lastTurnId, cwd }))
        : await this.forkUnloaded(thread, lastTurnId, cwd);
    await this.shareThread(forked);
    return forked;
  }

  /** A thread no engine has loaded (a kept conversation): read and copied through any engine. */
  private async forkUnloaded(thread: string, lastTurnId: string, cwd: string): Promise<string> {
    const { engines } = this.deps;
    const res = await engines.call<{ thread: { id: string } }>("thread/fork", {
      threadId: thread,
      lastTurnId,
      cwd,
      excludeTurns: true,
    });
    await engines.call("thread/unsubscribe", { threadId: res.thread.id }).catch(() => {});
    return res.thread.id;
  }

  private async listThreadTurns(thread: string): Promise<EngineTurnRef[]> {
    const out: EngineTurnRef[] = [];
    for (let cursor: string | null = null; ; ) {
      const page: { data: Array<{ id: string; items: Array<{ id: string }> }>; nextCursor: string | null } =
        await this.deps.engines.call("thread/turns/list", {
          threadId: thread,
          sortDirection: "asc",
          itemsView: "summary",
          limit: 100,
          ...(cursor ? { cursor } : {}),
        });
      for (const t of page.data) out.push({ id: t.id, itemIds: t.items.map((i) => i.id) });
      if (!page.nextCursor || page.data.length === 0) return out;
      cursor = page.nextCursor;
    }
  }

  /** Other instances continue a thread from the shared rollout store (a no-op with one instance). */
  async shareThread(thread: string): Promise<void> {
    await this.deps.rollouts.save(thread).catch((err: unknown) => {
      this.deps.logger.warn({ thread, err: String(err) }, "could not store a thread's rollout");
    });
  }
}

/**
 * Forking a checkpoint: a new session with its own workspace directory starting from a checkpoint (or from the
 * end of a turn) of another: that checkpoint's files (its store borrows the source's objects while they are
 * written out) and, unless `conversation: none`, the conversation up to that point (a copy of the thread, and the
 * history of those turns). The way to get a shared workspace's checkpoint back. A fork that fails is removed.
 */

import type { Logger } from "pino";
import type { SessionFields, SessionService } from "../../domain/sessions/service.js";
import { sessionMeta } from "../../model/checkpoint-names.js";
import type { CheckpointInfo, ForkOutcome } from "../../model/checkpoints.js";
import type { Scope } from "../../model/scope.js";
import { settingsOf } from "../../model/settings.js";
import type { SessionRecord, Store, TurnRecord } from "../../store/types.js";
import type { CheckpointAnnouncer } from "./announce.js";
import type { SessionClaims } from "./claims.js";
import { type ConvPoint, conversationHistory, formatConv, parseConv } from "./conversation.js";
import type { Housekeeping } from "./housekeeping.js";
import type { CheckpointReader } from "./reads.js";
import type { CheckpointStores } from "./stores.js";
import type { ConversationThreads } from "./threads.js";

export class CheckpointFork {
  constructor(
    private readonly deps: {
      store: Store;
      sessions: SessionService;
      logger: Logger;
      stores: CheckpointStores;
      reader: CheckpointReader;
      claims: SessionClaims;
      threads: ConversationThreads;
      announcer: CheckpointAnnouncer;
      housekeeping: Housekeeping;
      /** The files a fork wrote (as this server's user) become the agent's. */
      handOver: (s: SessionRecord) => Promise<void>;
    },
  ) {}

  /**
   * A new session (its own workspace directory) starting from a checkpoint or from the end of a turn: the files of
   * that checkpoint, and the conversation up to that point (`conversation: none` starts a new one).
   */
  async fork(
    scope: Scope,
    s: SessionRecord,
    from: { checkpoint: string } | { turn: TurnRecord },
    opts: { conversation: "fork" | "none" },
  ): Promise<ForkOutcome> {
    const { stores, reader, claims, threads, announcer, housekeeping, handOver } = this.deps;
    const repo = await stores.openFor(s);
    let target: CheckpointInfo;
    let point: ConvPoint;
    let turnId: string | null = null;
    if ("turn" in from) {
      const bounds = await reader.turnBounds(s, from.turn, repo);
      target = bounds.after;
      turnId = from.turn.id;
      point = { kind: "after", turn: from.turn.id, engineTurn: null };
    } else {
      target = await reader.checkpointOf(s, repo, from.checkpoint);
      point = parseConv(target.meta.conv);
      turnId = target.meta.turn_id ?? null;
    }
    await claims.refuseBusy(s, "fork");
    // The conversation follows only from the session's own checkpoints (a shared directory's may be another's).
    const plan =
      opts.conversation === "fork" && (target.meta.session_id ?? s.id) === s.id
        ? await threads.planConversation(
            s,
            { ...target, meta: { ...target.meta, conv: formatConv(point) } },
            repo,
          )
        : null;
    const { sessions, store } = this.deps;
    const origin = { session_id: s.id, checkpoint_id: target.id, turn_id: turnId };
    const fields: SessionFields = {
      name: s.name,
      model: s.model,
      instructions: s.instructions,
      tools: s.tools,
      metadata: s.metadata,
      settings: settingsOf(s.extra),
      extra: {
        ...(s.extra.environment !== undefined ? { environment: s.extra.environment } : {}),
        ...(s.extra.review !== undefined ? { review: s.extra.review } : {}),
        checkpoint_fork: origin,
      },
    };
    const created = await sessions.create(scope, fields, { workspace: "session" });
    try {
      const ws = stores.of(created);
      const forked = await repo.forkInto(
        target.id,
        ws.dir,
        created.workspace,
        stores.options(ws),
        `forked from ${s.id}`,
        sessionMeta(created, {
          kind: "fork",
          conv: "base",
          forked_from: target.id,
          forked_from_session: s.id,
        }),
        () => handOver(created),
      );
      ws.repo = Promise.resolve(forked.repo);
      let thread: string | null = null;
      if (plan?.thread && plan.prefix > 0) {
        thread = await threads.forkThread(s, plan.thread, plan.turns[plan.prefix - 1]!.id, created.workspace);
        // The fork's history is the conversation it was forked with: those turns and their items.
        await store.copyHistory(
          s.id,
          created.id,
          await conversationHistory(store, s.id, plan.turns, plan.prefix),
        );
      }
      const session =
        (await store.updateSession(created.id, { thread_id: thread, agent_id: s.agent_id })) ?? created;
      await announcer.announce(session, forked.checkpoint, null);
      housekeeping.scheduleIdle(ws);
      return {
        session,
        checkpoint: forked.checkpoint,
        from: origin,
        conversationTurns: thread ? plan!.prefix : 0,
      };
    } catch (err) {
      await sessions
        .delete(scope, created.id)
        .catch((e: unknown) =>
          this.deps.logger.error({ session: created.id, err: String(e) }, "could not remove a failed fork"),
        );
      throw err;
    }
  }
}

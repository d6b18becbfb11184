/**
 * Restoring a session's workspace to a checkpoint, optionally with its conversation (see service.ts's header for
 * the rules). A dry run lists what would change; a real one is refused in a shared workspace, claims the session
 * like a turn does (no turn starts meanwhile; a running one is a 409), and happens whole or not at all: when the
 * conversation cannot follow, the files go back. Before a revert the current conversation is copied into a backup
 * thread named by the safety checkpoint, so restoring that one with `conversation: revert` undoes both.
 */

import type { Logger } from "pino";
import type { TurnRunner } from "../../domain/turns/runner.js";
import { conflict } from "../../kernel/errors.js";
import { sessionMeta } from "../../model/checkpoint-names.js";
import type { CheckpointInfo, RestoreOutcome } from "../../model/checkpoints.js";
import type { ShadowRepo } from "../../platform/git-store/shadow-repo.js";
import type { SessionRecord, Store } from "../../store/types.js";
import type { CheckpointAnnouncer } from "./announce.js";
import type { SessionClaims } from "./claims.js";
import { currentConv } from "./conversation.js";
import type { Housekeeping } from "./housekeeping.js";
import type { CheckpointReader } from "./reads.js";
import type { CheckpointStores } from "./stores.js";
import type { ConversationPlan, ConversationThreads } from "./threads.js";

/** A RestoreOutcome from what the store answered and the conversation's plan. */
type Outcome = (
  r: Omit<RestoreOutcome, "target" | "dryRun" | "conversation" | "conversationTurns">,
  plan: ConversationPlan | null,
) => RestoreOutcome;

export class CheckpointRestore {
  constructor(
    private readonly deps: {
      store: Store;
      runner: Pick<TurnRunner, "withThread">;
      logger: Logger;
      stores: CheckpointStores;
      reader: CheckpointReader;
      claims: SessionClaims;
      threads: ConversationThreads;
      announcer: CheckpointAnnouncer;
      housekeeping: Housekeeping;
      /** The files a restore wrote (as this server's user) become the agent's. */
      handOver: (s: SessionRecord) => Promise<void>;
    },
  ) {}

  /**
   * Makes the workspace what it was at a checkpoint (a dry run only lists what would change), optionally reverting
   * the conversation to where it stood then.
   */
  async restore(
    s: SessionRecord,
    id: string,
    opts: { dryRun: boolean; conversation: "keep" | "revert" },
  ): Promise<RestoreOutcome> {
    const { stores, reader, threads, claims, housekeeping } = this.deps;
    const ws = stores.of(s);
    const repo = await stores.openFor(s);
    const target = await reader.checkpointOf(s, repo, id);
    const outcome: Outcome = (r, plan) => ({
      ...r,
      target,
      dryRun: opts.dryRun,
      conversation: opts.conversation,
      conversationTurns: plan ? { kept: plan.prefix, dropped: plan.turns.length - plan.prefix } : null,
    });
    if (opts.dryRun) {
      const plan = opts.conversation === "revert" ? await threads.planConversation(s, target, repo) : null;
      return outcome(await repo.restore(target.id, { dryRun: true }), plan);
    }
    if (ws.shared) {
      throw conflict(
        "This session shares its workspace directory with other sessions: a restore would change their files too. " +
          "Fork the checkpoint into a session of its own instead (POST …/checkpoints/{id}/fork), or use sessions " +
          "with workspace_mode: session",
        "workspace_shared",
      );
    }
    await claims.refuseBusy(s, "restore");
    const claimed = await claims.claimForRestore(s);
    ws.idle?.cancel();
    try {
      return await this.restoreClaimed(claimed, repo, target, opts.conversation, outcome);
    } finally {
      await claims.release(claimed);
      housekeeping.scheduleIdle(ws);
    }
  }

  private async restoreClaimed(
    s: SessionRecord,
    repo: ShadowRepo,
    target: CheckpointInfo,
    conversation: "keep" | "revert",
    outcome: Outcome,
  ): Promise<RestoreOutcome> {
    const { runner, threads, announcer, handOver } = this.deps;
    const current = await currentConv(this.deps.store, s.id);
    let plan: ConversationPlan | null = null;
    let backup: string | null = null;
    if (conversation === "revert") {
      // Everything that can refuse comes before any change.
      plan = await threads.planConversation(s, target, repo);
      if (s.thread_id) {
        backup = await runner.withThread(s, (thread) => thread.fork({ cwd: s.workspace }));
        await threads.shareThread(backup);
      }
    }
    const result = await repo.restore(target.id, {
      forceSafety: backup !== null,
      safetyMeta: sessionMeta(s, {
        kind: "before_restore",
        conv: current,
        ...(backup ? { conv_thread: backup } : {}),
      }),
      restoredMeta: sessionMeta(s, { kind: "restore", conv: current }),
      written: () => handOver(s),
    });
    if (plan) {
      try {
        await threads.applyConversation(s, plan);
      } catch (err) {
        // The files go back to where they were: a restore happens whole or not at all.
        const back =
          result.restored && result.undo
            ? await repo
                .restore(result.undo, {
                  restoredMeta: sessionMeta(s, { kind: "restore", conv: current }),
                  written: () => handOver(s),
                })
                .catch((e: unknown) => {
                  this.deps.logger.error(
                    { session: s.id, err: String(e) },
                    "could not undo a failed restore",
                  );
                  return null;
                })
            : null;
        // The checkpoints it made are there all the same (listed, restorable): each says so, like any other.
        for (const made of [result.safety, result.restored, back?.restored]) {
          if (!made) continue;
          await announcer.announce(s, made, null).catch((e: unknown) => {
            this.deps.logger.error({ session: s.id, err: String(e) }, "could not announce a checkpoint");
          });
        }
        throw err;
      }
    }
    if (result.safety) await announcer.announce(s, result.safety, null);
    if (result.restored) await announcer.announce(s, result.restored, null);
    return outcome(result, plan);
  }
}

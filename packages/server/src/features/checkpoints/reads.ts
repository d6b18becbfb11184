/**
 * Reading a session's checkpoints: those it sees (every one of its own store; its project's in a shared store),
 * one by public id, the checkpoints before and after a turn (its marks), diffs and files. What the session does
 * not see is a 404 like what does not exist.
 */

import type { CheckpointSettings } from "../../config/load.js";
import { conflict, notFound } from "../../kernel/errors.js";
import { commitOf, SAFE_ID, turnMark } from "../../model/checkpoint-names.js";
import type { CheckpointInfo, DiffResult } from "../../model/checkpoints.js";
import type { ShadowRepo } from "../../platform/git-store/shadow-repo.js";
import type { SessionRecord, TurnRecord } from "../../store/types.js";
import type { CheckpointStores } from "./stores.js";

export class CheckpointReader {
  constructor(private readonly deps: { settings: CheckpointSettings; stores: CheckpointStores }) {}

  /** The session's checkpoints (those of its project in a shared store), oldest first. */
  async list(s: SessionRecord, opts: { turnId?: string } = {}): Promise<CheckpointInfo[]> {
    const repo = await this.deps.stores.openFor(s);
    return (await repo.list()).filter(
      (c) => this.visible(s, c) && (opts.turnId === undefined || c.meta.turn_id === opts.turnId),
    );
  }

  async get(s: SessionRecord, id: string): Promise<CheckpointInfo> {
    return this.checkpointOf(s, await this.deps.stores.openFor(s), id);
  }

  /** From `from` (default: its parent) to checkpoint `id`. */
  async diff(
    s: SessionRecord,
    id: string,
    opts: { from?: string; patch?: boolean; maxPatchBytes?: number },
  ): Promise<DiffResult> {
    const repo = await this.deps.stores.openFor(s);
    const to = await this.checkpointOf(s, repo, id);
    const from = opts.from !== undefined ? await this.checkpointOf(s, repo, opts.from, "from") : null;
    const diff = await repo.diff(from?.id ?? null, to.id, this.patchOptions(opts));
    return { from: from?.id ?? to.parent, to: to.id, diff };
  }

  /** What a turn changed: from the checkpoint before it to the one after it. */
  async turnDiff(
    s: SessionRecord,
    turn: TurnRecord,
    opts: { patch?: boolean; maxPatchBytes?: number },
  ): Promise<DiffResult> {
    const repo = await this.deps.stores.openFor(s);
    const { before, after } = await this.turnBounds(s, turn, repo);
    const diff = await repo.diff(before?.id ?? null, after.id, this.patchOptions(opts));
    return { from: before?.id ?? after.parent, to: after.id, diff };
  }

  /** A file's bytes at a checkpoint (404 when it has no such file). */
  async file(s: SessionRecord, id: string, path: string): Promise<Buffer> {
    const repo = await this.deps.stores.openFor(s);
    const c = await this.checkpointOf(s, repo, id);
    const content = await repo.fileAt(c.id, path);
    if (!content) throw notFound(`Checkpoint ${id} has no file ${JSON.stringify(path)}`, "path");
    return content;
  }

  /** Checkpoint `id` (a public id, given as `param`) as the session sees it in `repo`; 404 when it does not. */
  async checkpointOf(
    s: SessionRecord,
    repo: ShadowRepo,
    id: string,
    param = "checkpoint_id",
  ): Promise<CheckpointInfo> {
    const c = await repo.get(commitOf(id, param));
    if (!c || !this.visible(s, c)) throw notFound(`No checkpoint ${id} in session ${s.id}`, param);
    return c;
  }

  /** The checkpoints before and after a turn (404 when none were recorded, 409 while it runs). */
  async turnBounds(
    s: SessionRecord,
    turn: TurnRecord,
    repo: ShadowRepo,
  ): Promise<{ before: CheckpointInfo | null; after: CheckpointInfo }> {
    if (turn.status === "in_progress" || turn.status === "queued") {
      throw conflict(
        `Turn ${turn.id} is still running: its checkpoints are complete once it has ended`,
        "turn_running",
      );
    }
    const after = SAFE_ID.test(turn.id) ? await repo.markTarget(turnMark(s.id, turn.id, "after")) : undefined;
    if (!after) {
      throw notFound(
        `No checkpoints were recorded for turn ${turn.id} (or they have been pruned)`,
        "turn_id",
      );
    }
    const before = (await repo.markTarget(turnMark(s.id, turn.id, "before"))) ?? null;
    return { before, after };
  }

  private visible(s: SessionRecord, c: CheckpointInfo): boolean {
    return !this.deps.stores.of(s).shared || c.meta.project_id === s.project_id;
  }

  private patchOptions(opts: { patch?: boolean; maxPatchBytes?: number }) {
    const cap = this.deps.settings.maxPatchBytes;
    return { patch: opts.patch ?? false, maxPatchBytes: Math.min(opts.maxPatchBytes ?? cap, cap) };
  }
}

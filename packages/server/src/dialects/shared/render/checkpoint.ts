/**
 * Checkpoints as both dialects show them (this server's extension: the same JSON in both, like the goal).
 */

import { kindOf, publicId, publicIdOrNull } from "../../../model/checkpoint-names.js";
import type { CheckpointInfo, DiffResult, FileChange, RestoreOutcome } from "../../../model/checkpoints.js";
import type { CheckpointSummary } from "../../../model/records.js";

export function checkpointObject(c: CheckpointInfo) {
  const m = c.meta;
  return {
    id: publicId(c.id),
    object: "agent.session.checkpoint",
    session_id: m.session_id ?? null,
    turn_id: m.turn_id ?? null,
    /** Which engine turn of the turn it follows (goal continuations count up from 1). */
    engine_turn: m.engine_turn ? Number(m.engine_turn) : null,
    kind: kindOf(c),
    label: c.label,
    parent_id: publicIdOrNull(c.parent),
    created_at: Math.floor(c.created_at),
    stats: c.stats,
    skipped: c.skipped,
    skipped_more: c.skipped_more,
    workspace_git: c.workspace_git,
    ...(m.restored_from ? { restored_from: publicId(m.restored_from) } : {}),
    ...(m.restore_of ? { restore_of: publicId(m.restore_of) } : {}),
    ...(m.forked_from ? { forked_from: publicId(m.forked_from) } : {}),
  };
}

/** The checkpoint of a `agent.session.checkpoint.created` event. */
export function checkpointEventObject(c: CheckpointSummary) {
  return { object: "agent.session.checkpoint", ...c };
}

function fileObject(f: FileChange) {
  return {
    path: f.path,
    ...(f.old_path !== undefined ? { old_path: f.old_path } : {}),
    status: f.status,
    binary: f.binary,
    insertions: f.insertions,
    deletions: f.deletions,
  };
}

export function diffObject(sessionId: string, d: DiffResult, turnId: string | null = null) {
  const files = d.diff.files;
  return {
    object: "agent.session.checkpoint.diff",
    session_id: sessionId,
    ...(turnId ? { turn_id: turnId } : {}),
    from_id: publicIdOrNull(d.from),
    to_id: publicId(d.to),
    stats: {
      files: files.length,
      insertions: files.reduce((n, f) => n + f.insertions, 0),
      deletions: files.reduce((n, f) => n + f.deletions, 0),
    },
    files: files.map(fileObject),
    ...(d.diff.patch !== undefined
      ? { patch: d.diff.patch, patch_truncated: d.diff.truncated ?? false }
      : {}),
  };
}

export function restoreObject(sessionId: string, r: RestoreOutcome) {
  return {
    object: "agent.session.checkpoint.restore",
    session_id: sessionId,
    checkpoint_id: publicId(r.target.id),
    dry_run: r.dryRun,
    conversation: r.conversation,
    changes: r.changes,
    safety_checkpoint: r.safety ? checkpointObject(r.safety) : null,
    undo_checkpoint_id: publicIdOrNull(r.undo),
    restored_checkpoint: r.restored ? checkpointObject(r.restored) : null,
    conversation_turns: r.conversationTurns,
  };
}

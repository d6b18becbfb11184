/**
 * How the service names checkpoints: public ids, kinds and the meta every checkpoint of a session carries (its
 * commit message holds it), the marks of a turn's bounds, and the summary the event log keeps.
 */
import { badRequest } from "../kernel/errors.js";
import type { CheckpointInfo } from "./checkpoints.js";
import type { CheckpointSummary, SessionRecord } from "./records.js";

/** Why a checkpoint was made. */
export type CheckpointKind =
  /** The first of a workspace (when a session first used it). */
  | "baseline"
  /** After an engine turn (every goal continuation has one). */
  | "turn"
  /** Before a turn: the workspace changed outside the agent since the latest checkpoint. */
  | "external"
  /** Asked for by a client. */
  | "manual"
  /** The workspace just before a restore (restore it to undo the restore). */
  | "before_restore"
  /** The workspace right after a restore. */
  | "restore"
  /** The first of a session forked from a checkpoint. */
  | "fork";

const KINDS: ReadonlySet<string> = new Set<CheckpointKind>([
  "baseline",
  "turn",
  "external",
  "manual",
  "before_restore",
  "restore",
  "fork",
]);

/** The meta the service writes into every checkpoint (all strings: they travel in the commit message). */
export interface CheckpointMeta {
  kind: CheckpointKind;
  session_id: string;
  project_id: string;
  /** The turn it belongs to: made after (an engine turn of) it, or just before it (external). */
  turn_id?: string;
  /** Which engine turn of the turn (1 for a plain turn; goal continuations count up). */
  engine_turn?: string;
  /** Where the session's conversation stood (see conversation.ts). */
  conv: string;
  /** The thread that holds that conversation when it is not the session's own (kept by a restore). */
  conv_thread?: string;
  /** A fork's origin. */
  forked_from?: string;
  forked_from_session?: string;
}

export const toMeta = (m: CheckpointMeta): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) if (typeof v === "string") out[k] = v;
  return out;
};

/** The meta of a checkpoint made for session `s`: its session and project, then `m`. */
export const sessionMeta = (
  s: SessionRecord,
  m: Omit<CheckpointMeta, "session_id" | "project_id">,
): Record<string, string> => toMeta({ session_id: s.id, project_id: s.project_id, ...m });

/** The mark of a turn's bound in the store: the checkpoint before it, or the one after it. */
export const turnMark = (sessionId: string, turnId: string, which: "before" | "after") =>
  `sessions/${sessionId}/turns/${turnId}/${which}`;
/** Mark names are [A-Za-z0-9_-]: ids that are not stay unmarked. */
export const SAFE_ID = /^[A-Za-z0-9_-]+$/;

const PUBLIC_ID = /^ckpt_([0-9a-f]{40})$/;

export const publicId = (commit: string): string => `ckpt_${commit}`;
export const publicIdOrNull = (commit: string | null): string | null => (commit ? publicId(commit) : null);

/** The store's commit id of a public checkpoint id; 400 when it is not one. */
export function commitOf(id: string, param = "checkpoint_id"): string {
  const m = PUBLIC_ID.exec(id);
  if (!m?.[1])
    throw badRequest(`Invalid checkpoint id ${JSON.stringify(id)}: expected ckpt_ and 40 hex digits`, param);
  return m[1];
}

export function kindOf(info: CheckpointInfo): CheckpointKind {
  const kind = info.meta.kind;
  if (kind && KINDS.has(kind)) return kind as CheckpointKind;
  if (info.meta.restored_from) return "restore";
  if (info.meta.restore_of) return "before_restore";
  return info.parent === null ? "baseline" : "manual";
}

/** What the event log keeps of a checkpoint. */
export function summaryOf(info: CheckpointInfo): CheckpointSummary {
  return {
    id: publicId(info.id),
    kind: kindOf(info),
    label: info.label,
    session_id: info.meta.session_id ?? "",
    turn_id: info.meta.turn_id ?? null,
    parent_id: publicIdOrNull(info.parent),
    created_at: info.created_at,
    stats: info.stats,
    skipped: info.skipped.length + info.skipped_more,
  };
}

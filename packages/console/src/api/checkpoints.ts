import type OpenAI from "openai";

/** Checkpoints are this server's extension: the SDK's generic verbs, with the dialect header. */
const beta = { headers: { "OpenAI-Beta": "agents=v1" } };
const sessionPath = (sessionId: string) => `/agents/sessions/${encodeURIComponent(sessionId)}`;

export interface ChangedFile {
  path: string;
  old_path?: string;
  status: "added" | "modified" | "deleted" | "renamed";
  binary: boolean;
  insertions: number;
  deletions: number;
}

/** What changed between two checkpoints (here: before and after one turn). */
export interface CheckpointDiff {
  object: "agent.session.checkpoint.diff";
  turn_id?: string;
  from_id: string | null;
  to_id: string;
  stats: { files: number; insertions: number; deletions: number };
  files: ChangedFile[];
  patch?: string;
  patch_truncated?: boolean;
}

export interface RestoreResult {
  object: "agent.session.checkpoint.restore";
  checkpoint_id: string;
  dry_run: boolean;
  changes: Array<{ path: string; action: string }>;
  undo_checkpoint_id: string | null;
  conversation_turns: { kept: number; dropped: number } | null;
}

/** What a turn changed in the workspace, with the unified diff. */
export function turnDiff(client: OpenAI, sessionId: string, turnId: string): Promise<CheckpointDiff> {
  return client.get<CheckpointDiff>(`${sessionPath(sessionId)}/turns/${encodeURIComponent(turnId)}/diff`, {
    ...beta,
    query: { patch: true },
  });
}

/** Makes the workspace that checkpoint's tree (and with `revert`, the conversation too); undoable. */
export function restoreCheckpoint(
  client: OpenAI,
  sessionId: string,
  checkpointId: string,
  conversation: "keep" | "revert",
): Promise<RestoreResult> {
  return client.post<RestoreResult>(
    `${sessionPath(sessionId)}/checkpoints/${encodeURIComponent(checkpointId)}/restore`,
    { ...beta, body: { conversation } },
  );
}

/** A new session from the end of a turn: its own workspace with that tree, the conversation up to it. */
export function forkTurn(client: OpenAI, sessionId: string, turnId: string): Promise<{ id: string }> {
  return client.post<{ id: string }>(`${sessionPath(sessionId)}/turns/${encodeURIComponent(turnId)}/fork`, {
    ...beta,
    body: {},
  });
}

import { useEffect, useState } from "react";
import {
  type CheckpointDiff,
  forkTurn,
  type RestoreResult,
  restoreCheckpoint,
  turnDiff,
} from "../api/checkpoints";
import { errorMessage } from "../api/client";
import { useApi } from "../api/context";
import { useAction } from "../hooks/useAction";
import { navigate } from "../router";
import { DiffText } from "./DiffText";
import { ErrorLine } from "./ErrorLine";

const STATUS_MARK: Record<string, string> = { added: "A", modified: "M", deleted: "D", renamed: "R" };

/**
 * What one turn changed in the workspace (from its checkpoints: shell commands included), and what to do about
 * it: undo it (restore the tree from before it, optionally forgetting the conversation since), undo that undo, or
 * fork a new session from the end of the turn.
 */
export function TurnChanges(props: { sessionId: string; turnId: string; onClose(): void }) {
  const { client } = useApi();
  const { sessionId, turnId } = props;
  const [diff, setDiff] = useState<CheckpointDiff | null>(null);
  const { busy, error, setError, run: act } = useAction();
  const [revertConversation, setRevertConversation] = useState(false);
  const [restored, setRestored] = useState<RestoreResult | null>(null);

  useEffect(() => {
    let live = true;
    setDiff(null);
    setError(null);
    setRestored(null);
    turnDiff(client, sessionId, turnId).then(
      (d) => live && setDiff(d),
      (err: unknown) => live && setError(errorMessage(err)),
    );
    return () => {
      live = false;
    };
  }, [client, sessionId, turnId, setError]);

  const conversation = revertConversation ? "revert" : "keep";
  const restore = (checkpointId: string) =>
    act(async () => setRestored(await restoreCheckpoint(client, sessionId, checkpointId, conversation)));
  const fork = () =>
    act(async () => {
      const forked = await forkTurn(client, sessionId, turnId);
      navigate({ name: "session", id: forked.id });
    });

  return (
    <section className="card turn-changes" aria-label="turn changes">
      <header className="row">
        <h3>Changes of turn</h3>
        <span className="spacer" />
        <button type="button" className="secondary small" onClick={props.onClose}>
          Close
        </button>
      </header>
      <p className="muted small">{turnId}</p>
      <ErrorLine error={error} />
      {!diff && !error && <p className="muted">Loading…</p>}
      {diff && (
        <>
          <p data-testid="turn-stats">
            {diff.stats.files} file{diff.stats.files === 1 ? "" : "s"}, +{diff.stats.insertions} −
            {diff.stats.deletions}
          </p>
          <ul className="changed-files">
            {diff.files.map((f) => (
              <li key={f.path} data-status={f.status}>
                <span className={`mark mark-${f.status}`}>{STATUS_MARK[f.status] ?? "?"}</span>{" "}
                <code>{f.old_path ? `${f.old_path} → ${f.path}` : f.path}</code>{" "}
                <span className="muted">{f.binary ? "binary" : `+${f.insertions} −${f.deletions}`}</span>
              </li>
            ))}
          </ul>
          {diff.patch ? <DiffText text={diff.patch} /> : null}
          {diff.patch_truncated && <p className="muted small">The patch is cut short (too large).</p>}
          <div className="row-actions">
            <label className="check">
              <input
                type="checkbox"
                checked={revertConversation}
                onChange={(e) => setRevertConversation(e.target.checked)}
              />
              also forget the conversation since
            </label>
            <button
              type="button"
              className="danger"
              disabled={busy || !diff.from_id}
              onClick={() => diff.from_id && void restore(diff.from_id)}
            >
              Undo this turn
            </button>
            <button type="button" className="secondary" disabled={busy} onClick={() => void fork()}>
              Fork from here
            </button>
          </div>
        </>
      )}
      {restored && (
        <output className="restored">
          <span>
            Restored: {restored.changes.length} file{restored.changes.length === 1 ? "" : "s"} changed
            {restored.conversation_turns ? `, ${restored.conversation_turns.dropped} turn(s) forgotten` : ""}.
          </span>{" "}
          {restored.undo_checkpoint_id && (
            <button
              type="button"
              className="secondary"
              disabled={busy}
              onClick={() => restored.undo_checkpoint_id && void restore(restored.undo_checkpoint_id)}
            >
              Undo the restore
            </button>
          )}
        </output>
      )}
    </section>
  );
}

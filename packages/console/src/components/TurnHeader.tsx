import { useEffect } from "react";
import { formatUsage } from "../format";
import type { TurnEntry } from "../state/timeline";
import { StatusBadge } from "./StatusBadge";

const ENDED = new Set(["completed", "failed", "cancelled"]);

/**
 * The line above a turn's items: its status and token usage (fetched for turns known from history only), and
 * once it has ended, a way to see what it changed in the workspace.
 */
export function TurnHeader(props: {
  turnId: string;
  turn: TurnEntry | undefined;
  ensure(id: string): void;
  showChanges?(id: string): void;
}) {
  const { turnId, turn, ensure, showChanges } = props;
  useEffect(() => {
    if (!turn) ensure(turnId);
  }, [turn, turnId, ensure]);
  return (
    <div className="turn-header" data-turn-id={turnId} data-turn-status={turn?.status ?? ""}>
      <span className="muted">turn {turnId}</span>
      {turn && <StatusBadge status={turn.status} />}
      {turn?.usage && <span className="usage">{formatUsage(turn.usage)}</span>}
      {turn?.error && <span className="error">{turn.error}</span>}
      {showChanges && turn && ENDED.has(turn.status) && (
        <button type="button" className="secondary small" onClick={() => showChanges(turnId)}>
          Changes
        </button>
      )}
    </div>
  );
}

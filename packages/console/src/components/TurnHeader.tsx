import { useEffect } from "react";
import { formatUsage } from "../format";
import type { TurnEntry } from "../state/timeline";
import { StatusBadge } from "./StatusBadge";

/** The line above a turn's items: its status and token usage (fetched for turns known from history only). */
export function TurnHeader(props: { turnId: string; turn: TurnEntry | undefined; ensure(id: string): void }) {
  const { turnId, turn, ensure } = props;
  useEffect(() => {
    if (!turn) ensure(turnId);
  }, [turn, turnId, ensure]);
  return (
    <div className="turn-header" data-turn-id={turnId} data-turn-status={turn?.status ?? ""}>
      <span className="muted">turn {turnId}</span>
      {turn && <StatusBadge status={turn.status} />}
      {turn?.usage && <span className="usage">{formatUsage(turn.usage)}</span>}
      {turn?.error && <span className="error">{turn.error}</span>}
    </div>
  );
}

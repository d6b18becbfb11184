/** A status word with a colour per state (idle, in_progress, completed, failed, …). */
export function StatusBadge(props: { status: string; label?: string }) {
  return (
    <span className={`badge status-${props.status}`} data-status={props.status}>
      {props.label ?? props.status.replace(/_/g, " ")}
    </span>
  );
}

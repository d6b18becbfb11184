import { useState } from "react";
import { useApi } from "../api/context";
import type { RequiredAction } from "../api/types";
import { ArtifactsPanel } from "../components/ArtifactsPanel";
import { Composer } from "../components/Composer";
import { GoalPanel } from "../components/GoalPanel";
import { RequiredActions } from "../components/RequiredActions";
import { StatusBadge } from "../components/StatusBadge";
import { Timeline } from "../components/Timeline";
import { TurnChanges } from "../components/TurnChanges";
import { formatUsage } from "../format";
import { useSessionTimeline } from "../hooks/useSessionTimeline";

/**
 * One session: its timeline as it happens, what it waits on, the composer, a turn's changes (undo, fork), the goal
 * and the artifacts.
 */
export function SessionView(props: { sessionId: string }) {
  const { client } = useApi();
  const state = useSessionTimeline(client, props.sessionId);
  const { timeline } = state;
  const [changesOf, setChangesOf] = useState<string | null>(null);
  const session = timeline.session;
  const status = session?.status ?? "idle";
  return (
    <section className="session">
      <header className="session-head">
        <h2>{props.sessionId}</h2>
        {session && <StatusBadge status={session.status} />}
        <span className="muted">{session ? (session.agent.name ?? session.agent.model) : ""}</span>
        <span className="muted">{formatUsage(session?.usage)}</span>
        <span className="spacer" />
        <span
          className={`connection ${state.connection}`}
          data-testid="connection"
          data-reconnects={state.reconnects}
        >
          {state.connection}
          {state.reconnects > 0 ? ` (reconnected ${state.reconnects}×)` : ""}
        </span>
      </header>
      {(state.loadError ?? timeline.error) && (
        <p role="alert" className="error">
          {state.loadError ?? timeline.error}
        </p>
      )}
      <div className="session-body">
        <div className="session-main">
          <Timeline state={state} showChanges={setChangesOf} />
          <RequiredActions
            sessionId={props.sessionId}
            actions={(session?.required_actions ?? []) as RequiredAction[]}
          />
          <Composer
            sessionId={props.sessionId}
            running={status === "in_progress"}
            waiting={status === "requires_action"}
          />
        </div>
        <aside className="session-side">
          {changesOf && (
            <TurnChanges sessionId={props.sessionId} turnId={changesOf} onClose={() => setChangesOf(null)} />
          )}
          <GoalPanel
            sessionId={props.sessionId}
            goal={timeline.goal}
            revision={timeline.revision}
            refresh={state.refreshGoal}
          />
          <ArtifactsPanel sessionId={props.sessionId} revision={timeline.revision} />
        </aside>
      </div>
    </section>
  );
}

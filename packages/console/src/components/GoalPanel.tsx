import { useEffect, useState } from "react";
import { errorMessage } from "../api/client";
import { useApi } from "../api/context";
import { changeGoal, clearGoal } from "../api/goal";
import type { Goal } from "../api/types";
import { ErrorLine } from "./ErrorLine";
import { StatusBadge } from "./StatusBadge";

const of = (used: number, cap: number | null, unit = "") =>
  `${used}${unit} / ${cap === null ? "∞" : `${cap}${unit}`}`;

/** The session's goal: objective, status and why, what it used against its caps; pause, resume, clear. */
export function GoalPanel(props: {
  sessionId: string;
  goal: Goal | null | undefined;
  revision: number;
  refresh(): void;
}) {
  const { client } = useApi();
  const { goal, refresh, revision } = props;
  const [error, setError] = useState<string | null>(null);
  const [raiseTurns, setRaiseTurns] = useState("");

  // Re-read after goal events and turn ends; while active, also every few seconds (time and tokens move).
  useEffect(() => {
    if (revision > 0) refresh();
  }, [revision, refresh]);
  const active = goal?.status === "active";
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(refresh, 3_000);
    return () => clearInterval(timer);
  }, [active, refresh]);

  const run = (what: () => Promise<unknown>) => {
    setError(null);
    what()
      .then(refresh)
      .catch((err: unknown) => setError(errorMessage(err)));
  };

  if (goal === undefined) return null;
  return (
    <section className="card goal" aria-label="goal">
      <h3>Goal</h3>
      {goal === null ? (
        <p className="muted">No goal. Tick “Start as a goal” in the composer to give the agent one.</p>
      ) : (
        <>
          <p className="objective" data-testid="goal-objective">
            {goal.objective}
          </p>
          <p>
            <StatusBadge status={goal.status} />{" "}
            <span className="muted" data-testid="goal-reason">
              {goal.status_reason ?? ""}
            </span>
          </p>
          <dl className="caps">
            <dt>Turns</dt>
            <dd data-testid="goal-turns">{of(goal.turns_used, goal.max_turns)}</dd>
            <dt>Tokens</dt>
            <dd data-testid="goal-tokens">{of(goal.tokens_used, goal.token_budget)}</dd>
            <dt>Time</dt>
            <dd data-testid="goal-time">
              {of(Math.round(goal.time_used_seconds), goal.max_duration_seconds, " s")}
            </dd>
          </dl>
          <div className="row-actions">
            {goal.status === "active" && (
              <button
                type="button"
                onClick={() => run(() => changeGoal(client, props.sessionId, { status: "paused" }))}
              >
                Pause
              </button>
            )}
            {goal.status !== "active" && goal.status !== "complete" && (
              <>
                <label>
                  Max turns
                  <input
                    name="resume-max-turns"
                    inputMode="numeric"
                    value={raiseTurns}
                    placeholder={String(goal.max_turns ?? "")}
                    onChange={(e) => setRaiseTurns(e.target.value)}
                  />
                </label>
                <button
                  type="button"
                  onClick={() =>
                    run(() =>
                      changeGoal(client, props.sessionId, {
                        status: "active",
                        ...(Number(raiseTurns) > 0 ? { max_turns: Number(raiseTurns) } : {}),
                      }),
                    )
                  }
                >
                  Resume
                </button>
              </>
            )}
            <button
              type="button"
              className="danger"
              onClick={() => run(() => clearGoal(client, props.sessionId))}
            >
              Clear
            </button>
          </div>
        </>
      )}
      <ErrorLine error={error} />
    </section>
  );
}
